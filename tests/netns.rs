//! Two hosts in network namespaces made by this test, each with its own address and sshd: a
//! sharded PS plus distributed clients across them (fake RecStore checkout, real processes).

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::sshd::free_port;
use common::Test;

fn sh(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Two namespaces on a private bridge; removed on drop.
struct Hosts {
    tag: String,
    subnet: String,
    sshds: Vec<Child>,
    dir: tempfile::TempDir,
}

impl Hosts {
    fn start() -> Result<Hosts, String> {
        if unsafe { libc::geteuid() } != 0 {
            return Err("network namespaces need root".into());
        }
        if !Path::new("/usr/sbin/sshd").exists() {
            return Err("/usr/sbin/sshd is not installed".into());
        }
        let n = std::process::id() % 10_000;
        let tag = format!("xt{n}");
        let subnet = format!("10.231.{}", n % 250);
        let mut h = Hosts {
            tag: tag.clone(),
            subnet: subnet.clone(),
            sshds: Vec::new(),
            dir: tempfile::Builder::new()
                .prefix("expr-ns")
                .tempdir()
                .unwrap(),
        };
        let br = format!("{tag}br");
        let setup = [
            format!("ip netns add {tag}h1"),
            format!("ip netns add {tag}h2"),
            format!("ip link add {br} type bridge"),
            format!("ip addr add {subnet}.254/24 dev {br}"),
            format!("ip link set {br} up"),
        ];
        for c in setup {
            if !sh(&c) {
                return Err(format!("`{c}` was refused"));
            }
        }
        for i in 1..=2 {
            for c in [
                format!("ip link add {tag}v{i} type veth peer name eth0 netns {tag}h{i}"),
                format!("ip link set {tag}v{i} master {br} up"),
                format!("ip -n {tag}h{i} addr add {subnet}.{i}/24 dev eth0"),
                format!("ip -n {tag}h{i} link set eth0 up"),
                format!("ip -n {tag}h{i} link set lo up"),
            ] {
                if !sh(&c) {
                    return Err(format!("`{c}` was refused"));
                }
            }
        }
        let d = h.dir.path().to_path_buf();
        for k in ["host", "client"] {
            assert!(sh(&format!(
                "ssh-keygen -q -t ed25519 -N '' -f {}/{k}_ed25519",
                d.display()
            )));
        }
        std::fs::copy(d.join("client_ed25519.pub"), d.join("authorized_keys")).unwrap();
        let _ = std::fs::create_dir_all("/run/sshd");
        let mut cfg = String::new();
        for i in 1..=2 {
            std::fs::write(
                d.join(format!("sshd{i}")),
                format!(
                    "Port 22\nListenAddress {subnet}.{i}\nHostKey {d}/host_ed25519\nPidFile {d}/sshd{i}.pid\nAuthorizedKeysFile {d}/authorized_keys\n\
                     PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nMaxStartups 100:30:200\nMaxSessions 50\n",
                    d = d.display()
                ),
            )
            .unwrap();
            let child = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &format!("{tag}h{i}"),
                    "/usr/sbin/sshd",
                    "-D",
                    "-f",
                ])
                .arg(d.join(format!("sshd{i}")))
                .arg("-E")
                .arg(d.join(format!("sshd{i}.log")))
                .spawn()
                .map_err(|e| e.to_string())?;
            h.sshds.push(child);
            cfg.push_str(&format!(
                "Host exprns{i}\n  HostName {subnet}.{i}\n  User root\n  IdentityFile {d}/client_ed25519\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  KexAlgorithms curve25519-sha256\n",
                d = d.display()
            ));
        }
        std::fs::write(d.join("ssh_config"), cfg).unwrap();
        for i in 1..=2 {
            let end = Instant::now() + Duration::from_secs(10);
            while std::net::TcpStream::connect_timeout(
                &format!("{subnet}.{i}:22").parse().unwrap(),
                Duration::from_millis(200),
            )
            .is_err()
            {
                if Instant::now() > end {
                    return Err(format!("sshd in {tag}h{i} did not listen"));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(h)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for i in 1..=2 {
            // every process left in the namespace (sshd and its sessions)
            let _ = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "for p in $(ip netns pids {}h{i}); do kill -9 $p; done",
                    self.tag
                ))
                .status();
        }
        for c in &mut self.sshds {
            let _ = c.kill();
            let _ = c.wait();
        }
        sh(&format!(
            "ip netns del {t}h1; ip netns del {t}h2; ip link del {t}br",
            t = self.tag
        ));
        let _ = &self.subnet;
    }
}

#[test]
fn netns_two_hosts_run_a_sharded_ps_and_distributed_clients() {
    let hosts = match Hosts::start() {
        Ok(h) => h,
        Err(why) => {
            common::skip(&format!("network namespaces unavailable: {why}"));
            return;
        }
    };
    let repo = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-recstore");
    assert!(sh(&format!(
        "cp -r {}/. {}",
        src.display(),
        repo.path().display()
    )));
    let s = &hosts.subnet;
    let (p0, p1) = (free_port(), free_port());
    let kdl = format!(
        "experiment ns\n\
         host h1 ssh=\"exprns1\" ip=\"{s}.1\" repo=\"{r}\"\n\
         host h2 ssh=\"exprns2\" ip=\"{s}.2\" repo=\"{r}\"\n\
         recstore-e2e {{\n    client host=h1 gpu=0 node-rank=0\n    client host=h2 gpu=0 node-rank=1\n    ps host=h1 port={p0} shard=0\n    ps host=h2 port={p1} shard=1\n    \
         runtime-dir \"{r}/shared_rt\"\n    master-addr \"{s}.1\"\n    steps 6\n    warmup-steps 1\n    repeat 1\n    lane RecStore-BRPC\n}}\n",
        r = repo.path().display()
    );
    std::fs::write(repo.path().join("e.kdl"), kdl).unwrap();
    let cfg = hosts.dir.path().join("ssh_config");
    let ran = Test::new()
        .dir(repo.path())
        .env("EXPR_SSH_CONFIG", cfg.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out", "--skip-tests"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out = repo.path().join("out");
    let journal = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
    // each host reports its own data-plane address to the server
    assert!(
        std::fs::read_to_string(out.join("logs/ps1-brpc_b1024_d128_r0-h2.log"))
            .unwrap()
            .contains(&format!("shard 1 listening on 0.0.0.0:{p1}"))
    );
    let client2 =
        std::fs::read_to_string(out.join("logs/client-n1-brpc_b1024_d128_r0-h2.log")).unwrap();
    assert!(
        client2.contains("server is ready"),
        "the h2 client reached shard 0 on h1 across the bridge: {client2}"
    );
    assert!(out
        .join("outputs/brpc_b1024_d128_r0/recstore_main.csv")
        .is_file());
    // nothing left in either namespace but sshd itself
    for i in 1..=2 {
        let pids = Command::new("ip")
            .args(["netns", "pids", &format!("{}h{i}", hosts.tag)])
            .output()
            .unwrap();
        let alive: Vec<String> = String::from_utf8_lossy(&pids.stdout)
            .lines()
            .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).ok())
            .map(|c| c.replace('\0', " "))
            .filter(|c| !c.starts_with("/usr/sbin/sshd") && !c.starts_with("sshd"))
            .collect();
        assert!(alive.is_empty(), "left in h{i}: {alive:?}\n{journal}");
    }
}
