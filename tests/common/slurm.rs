//! A real Slurm cluster of one node on this machine for tests: munge (started if it is not
//! running), slurmctld and slurmd with a generated slurm.conf on free ports, stopped at drop.
//! Tests pass `SLURM_CONF` to expr. One cluster at a time: take `lock()` first.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static ONE: Mutex<()> = Mutex::new(());

/// Slurm tests of a binary run one at a time (one controller, its ports, its queue).
pub fn lock() -> MutexGuard<'static, ()> {
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct Slurm {
    pub dir: tempfile::TempDir,
    pub conf: PathBuf,
    kids: Vec<Child>,
    munged: Option<Child>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn munge_works() -> bool {
    Command::new("bash")
        .args(["-c", "munge -n | unmunge >/dev/null 2>&1"])
        .status()
        .is_ok_and(|s| s.success())
}

impl Slurm {
    /// Start the cluster, or say why it cannot run here (under CI that is a failure).
    pub fn start() -> Option<Slurm> {
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
        let (cp, dp) = (free_port(), free_port());
        let conf = d.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=exprtest\nSlurmctldHost={host}(127.0.0.1)\nSlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCryptoType=crypto/munge\n\
                 MpiDefault=none\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
                 AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\nSchedulerType=sched/backfill\n\
                 SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\nMinJobAge=300\nSlurmdParameters=config_overrides\nSchedulerParameters=batch_sched_delay=0,sched_min_interval=0\n\
                 SlurmctldPort={cp}\nSlurmdPort={dp}\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
                 SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\nSlurmctldLogFile={d}/log/slurmctld.log\n\
                 SlurmdLogFile={d}/log/slurmd.log\nNodeName={host} NodeAddr=127.0.0.1 CPUs=16 RealMemory=1000 State=UNKNOWN\n\
                 PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
                d = d.display()
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
        let kids = vec![
            daemon(&["/usr/sbin/slurmctld", "-D", "-i"]),
            daemon(&["/usr/sbin/slurmd", "-D"]),
        ];
        let s = Slurm {
            dir,
            conf,
            kids,
            munged,
        };
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let o = s.cmd("sinfo", &["-h", "-o", "%T"]);
            if o.trim() == "idle" {
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
