//! A real Slurm cluster of one node on this machine for tests: munge (started if it is not
//! running), slurmctld and slurmd with a generated slurm.conf on free ports, stopped at drop.
//! Tests pass `SLURM_CONF` to expr. One cluster at a time: take `lock()` first.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static ONE: Mutex<()> = Mutex::new(());

/// Held while a Slurm test runs: the test binary's mutex and a lock file every test process of
/// this machine takes (two `cargo test` runs at once would share munged: one's cluster, stopped,
/// takes the other's munge away).
pub struct One {
    _file: std::fs::File,
    _guard: MutexGuard<'static, ()>,
}

/// Slurm tests run one at a time (one controller, its ports, its queue, one munged).
pub fn lock() -> One {
    let guard = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let path = std::env::temp_dir().join("expr-slurm-tests.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .expect("the Slurm tests' lock file");
    // SAFETY: flock on a file descriptor this function owns; released when it is closed
    let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock {}", path.display());
    One {
        _file: file,
        _guard: guard,
    }
}

pub struct Slurm {
    pub dir: tempfile::TempDir,
    pub conf: PathBuf,
    pub(crate) kids: Vec<Child>,
    munged: Option<Child>,
}

use super::sshd::free_port;

fn munge_works() -> bool {
    Command::new("bash")
        // quiet: asked every 20 ms while munged starts, its "Failed to access …socket" would
        // be the test run's loudest (and most alarming) line
        .args(["-c", "munge -n 2>/dev/null | unmunge >/dev/null 2>&1"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Slurm {
    /// Start the cluster, or say why it cannot run here (under CI that is a failure).
    pub fn start() -> Option<Slurm> {
        let host =
            String::from_utf8(Command::new("hostname").arg("-s").output().ok()?.stdout).ok()?;
        let host = host.trim().to_string();
        Slurm::start_with(
            "127.0.0.1",
            &format!("NodeName={host} NodeAddr=127.0.0.1 CPUs=16 RealMemory=1000 State=UNKNOWN\n"),
            &[vec!["/usr/sbin/slurmd".to_string(), "-D".to_string()]],
            1,
        )
    }

    /// A cluster whose controller listens at `ctld` with these node lines and slurmd commands;
    /// ready when `idle` nodes are.
    pub fn start_with(
        ctld: &str,
        nodes: &str,
        slurmds: &[Vec<String>],
        idle: usize,
    ) -> Option<Slurm> {
        let why = if !Path::new("/usr/sbin/slurmctld").exists()
            || !Path::new("/usr/sbin/slurmd").exists()
        {
            Some("slurmctld/slurmd are not installed (apt-get install slurmctld slurmd slurm-client munge)")
        } else if !Path::new("/usr/sbin/munged").exists() {
            Some("munged is not installed (apt-get install munge)")
        } else if unsafe { libc::geteuid() } != 0 {
            Some("the Slurm fixture runs the daemons as root")
        } else {
            None
        };
        if let Some(why) = why {
            super::skip(why);
            return None;
        }
        let mut munged = None;
        if !munge_works() {
            let _ = Command::new("install")
                .args([
                    "-d",
                    "-o",
                    "munge",
                    "-g",
                    "munge",
                    "-m",
                    "0755",
                    "/run/munge",
                ])
                .status();
            munged = Some(
                Command::new("runuser")
                    .args(["-u", "munge", "--", "/usr/sbin/munged", "--foreground"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("munged"),
            );
            let end = Instant::now() + Duration::from_secs(10);
            while !munge_works() {
                assert!(Instant::now() < end, "munged did not start");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let dir = tempfile::Builder::new()
            .prefix("expr-slurm")
            .tempdir()
            .unwrap();
        let d = dir.path();
        for s in ["state", "spool", "log"] {
            std::fs::create_dir_all(d.join(s)).unwrap();
        }
        let host =
            String::from_utf8(Command::new("hostname").arg("-s").output().unwrap().stdout).unwrap();
        let host = host.trim();
        let multi = slurmds.len() > 1;
        let per = |base: &str, ext: &str| {
            if multi {
                format!("{base}-%n{ext}")
            } else {
                format!("{base}{ext}")
            }
        };
        let (cp, dp) = (free_port(), free_port());
        let conf = d.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=exprtest\nSlurmctldHost={host}({ctld})\nSlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCryptoType=crypto/munge\n\
                 MpiDefault=none\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
                 AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\nSchedulerType=sched/backfill\n\
                 SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\nMinJobAge=300\nSlurmdParameters=config_overrides\nSchedulerParameters=batch_sched_delay=0,sched_min_interval=0\nMaxArraySize=101\n\
                 SlurmctldPort={cp}\nSlurmdPort={dp}\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/{spool}\n\
                 SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/{pid}\nSlurmctldLogFile={d}/log/slurmctld.log\n\
                 SlurmdLogFile={d}/log/{log}\n{nodes}\
                 PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
                d = d.display(),
                spool = per("spool", ""),
                pid = per("slurmd", ".pid"),
                log = per("slurmd", ".log"),
            ),
        )
        .unwrap();
        let daemon = |args: &[&str]| {
            Command::new(args[0])
                .args(&args[1..])
                .env("SLURM_CONF", &conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("slurm daemon")
        };
        let mut kids = vec![daemon(&["/usr/sbin/slurmctld", "-D", "-i"])];
        for c in slurmds {
            let c: Vec<&str> = c.iter().map(String::as_str).collect();
            kids.push(daemon(&c));
        }
        let s = Slurm {
            dir,
            conf,
            kids,
            munged,
        };
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let o = s.cmd("sinfo", &["-h", "-N", "-o", "%T"]);
            if o.lines().filter(|l| l.trim() == "idle").count() == idle {
                break;
            }
            assert!(
                Instant::now() < end,
                "the Slurm node never became idle: {o}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(s)
    }

    /// A Slurm client command against this cluster: its stdout.
    pub fn cmd(&self, program: &str, args: &[&str]) -> String {
        Command::new(program)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// The jobs in the queue (any state): `id|name|state`.
    pub fn queue(&self) -> Vec<String> {
        self.cmd("squeue", &["-h", "-o", "%i|%j|%T"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Wait until the queue is empty (cancelled jobs leave it a moment later).
    pub fn drained(&self, within: Duration) -> bool {
        let end = Instant::now() + within;
        while Instant::now() < end {
            if self.queue().is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for j in self.queue() {
            if let Some(id) = j.split('|').next() {
                let _ = self.cmd("scancel", &[id]);
            }
        }
        for k in self.kids.iter_mut().rev() {
            unsafe { libc::kill(k.id() as i32, libc::SIGTERM) };
            let _ = k.wait();
        }
        if let Some(m) = &mut self.munged {
            unsafe { libc::kill(m.id() as i32, libc::SIGTERM) };
            let _ = m.wait();
        }
    }
}

/// Two Slurm nodes `h1` and `h2`, each a network namespace on a private bridge with its own
/// address (`SUBNET.1`, `SUBNET.2`) and its own slurmd (`nsenter --net=… slurmd -N hN`); the
/// controller runs here at `SUBNET.254`. The filesystem is shared, as on a cluster.
pub struct TwoNodes {
    pub tag: String,
    pub subnet: String,
    pub slurm: Slurm,
}

fn sh(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl TwoNodes {
    /// Start both nodes, or say why they cannot run here (under CI that is a failure).
    pub fn start() -> Option<TwoNodes> {
        let n = std::process::id() % 10_000;
        let tag = format!("xs{n}");
        let subnet = format!("10.232.{}", n % 250);
        let br = format!("{tag}br");
        let mut cmds = vec![
            format!("ip netns add {tag}h1"),
            format!("ip netns add {tag}h2"),
            format!("ip link add {br} type bridge"),
            format!("ip addr add {subnet}.254/24 dev {br}"),
            format!("ip link set {br} up"),
        ];
        for i in 1..=2 {
            cmds.extend([
                format!("ip link add {tag}v{i} type veth peer name eth0 netns {tag}h{i}"),
                format!("ip link set {tag}v{i} master {br} up"),
                format!("ip -n {tag}h{i} addr add {subnet}.{i}/24 dev eth0"),
                format!("ip -n {tag}h{i} link set eth0 up"),
                format!("ip -n {tag}h{i} link set lo up"),
                // srun here is reached back at this machine's own addresses
                format!("ip -n {tag}h{i} route add default via {subnet}.254"),
            ]);
        }
        let cleanup = |tag: &str| {
            sh(&format!(
                "ip netns del {tag}h1; ip netns del {tag}h2; ip link del {tag}br"
            ))
        };
        for c in &cmds {
            if !sh(c) {
                cleanup(&tag);
                super::skip(&format!(
                    "network namespaces for two Slurm nodes: `{c}` was refused"
                ));
                return None;
            }
        }
        let nodes = format!(
            "NodeName=h1 NodeAddr={subnet}.1 CPUs=4 RealMemory=1000 State=UNKNOWN\nNodeName=h2 NodeAddr={subnet}.2 CPUs=4 RealMemory=1000 State=UNKNOWN\n"
        );
        let daemons: Vec<Vec<String>> = (1..=2)
            .map(|i| {
                vec![
                    "nsenter".to_string(),
                    format!("--net=/run/netns/{tag}h{i}"),
                    "/usr/sbin/slurmd".into(),
                    "-D".into(),
                    "-N".into(),
                    format!("h{i}"),
                ]
            })
            .collect();
        let Some(slurm) = Slurm::start_with(&format!("{subnet}.254"), &nodes, &daemons, 2) else {
            cleanup(&tag);
            return None;
        };
        Some(TwoNodes { tag, subnet, slurm })
    }
}

impl Drop for TwoNodes {
    fn drop(&mut self) {
        // the daemons first (Slurm's own drop runs after this one): then the namespaces
        for j in self.slurm.queue() {
            if let Some(id) = j.split('|').next() {
                let _ = self.slurm.cmd("scancel", &[id]);
            }
        }
        for k in self.slurm.kids.iter_mut().rev() {
            unsafe { libc::kill(k.id() as i32, libc::SIGTERM) };
            let _ = k.wait();
        }
        self.slurm.kids.clear();
        for i in 1..=2 {
            sh(&format!(
                "for p in $(ip netns pids {}h{i}); do kill -9 $p; done",
                self.tag
            ));
        }
        sh(&format!(
            "ip netns del {t}h1; ip netns del {t}h2; ip link del {t}br",
            t = self.tag
        ));
    }
}
