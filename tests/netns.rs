//! Two hosts in network namespaces made by this test, each with its own address and sshd: a
//! sharded PS plus distributed clients across them (fake RecStore checkout, real processes),
//! and the noise checks over ssh (issue 27) with a stand-in `nvidia-smi` on each host's PATH
//! (`…_standin_gpu`: there is no GPU here).

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
        // tests of this binary run at once: each pair of hosts has names and a subnet of its own
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let n = std::process::id() % 10_000;
        let tag = format!("xt{n}{k}");
        let subnet = format!("10.{}.{}", 231 + k, n % 250);
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
         recstore-e2e {{\n    // the hosts have no stand-in GPUs on their login PATH: CPU clients\n    device \"cpu\"\n    client host=h1 gpu=0 node-rank=0\n    client host=h2 gpu=0 node-rank=1\n    ps host=h1 port={p0} shard=0\n    ps host=h2 port={p1} shard=1\n    \
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

fn git(repo: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {o:?}");
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// `expr bisect` with its hosts behind ssh in the namespaces: the checkout is reached, each
/// commit checked out and built there, the slow commit named, the broken ones skipped, the
/// user's working tree left as it was; both hosts see the checkout at one path (one
/// filesystem), so each commit gets one worktree; a later bisection reuses the builds.
#[test]
fn netns_bisect_over_ssh_names_the_slow_commit_and_leaves_the_users_tree_alone() {
    let hosts = match Hosts::start() {
        Ok(h) => h,
        Err(why) => {
            common::skip(&format!("network namespaces unavailable: {why}"));
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let repo = root.join("repo");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bisect/make-repo.sh");
    assert!(sh(&format!("bash {} {}", script.display(), repo.display())));
    // the user's work in progress, which no build may see or touch
    std::fs::write(repo.join("notes"), "my edit\n").unwrap();
    std::fs::write(repo.join("scratch.txt"), "untracked\n").unwrap();
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let status = git(&repo, &["status", "--porcelain"]);
    assert_eq!(status, "M notes\n?? scratch.txt");
    std::fs::create_dir(root.join("noise")).unwrap();
    let s = &hosts.subnet;
    let kdl = format!(
        r#"experiment slowdown {{
    description "a 15 % slowdown buried in ±20 % noise, on hosts behind ssh"
}}

host h1 ssh="exprns1" ip="{s}.1" repo="{r}"
host h2 ssh="exprns2" ip="{s}.2" repo="{r}"

bench lat {{
    param seed "1"
    param noise "{n}"
    build host=h1 "sh build.sh"
    test host=h2 "sh test.sh"
    run host=h1 "python3 bench.py {{{{ seed }}}} {{{{ noise }}}}"
    collect "regex" pattern="lat=(?P<lat>[0-9.]+)" metric="lat" direction="lower"
    repeat 8
}}
"#,
        r = repo.display(),
        n = root.join("noise").display()
    );
    let file = root.join("exp.kdl");
    std::fs::write(&file, kdl).unwrap();
    let cfg = hosts.dir.path().join("ssh_config");
    let bisect = |out: &str, extra: &[&str]| {
        Test::new()
            .dir(root)
            .env("EXPR_SSH_CONFIG", cfg.to_str().unwrap())
            .args(["bisect", "--metric", "lat", "--output", out, "--history"])
            .arg_path(&root.join("h.sqlite"))
            .args(extra)
            .arg_path(&file)
            .run()
    };
    let t0 = Instant::now();
    let ran = bisect("b1", &["--good", "HEAD~11", "--bad", "HEAD"]);
    eprintln!("{}\ntook {:?}", ran.stderr, t0.elapsed());
    println!("{}", ran.stdout);
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let sha = |k: usize| git(&repo, &["rev-parse", &format!("HEAD~{}", 11 - k)]);
    assert!(
        ran.stdout
            .contains(&format!("first bad commit: {}", sha(7))),
        "{}",
        ran.stdout
    );
    for (k, why) in [(5, "does not build"), (8, "fails its correctness test")] {
        let short = sha(k)[..12].to_string();
        let line = ran
            .stdout
            .lines()
            .find(|l| l.contains(&short) && l.contains("| skip |"))
            .unwrap_or_else(|| panic!("{short} not skipped:\n{}", ran.stdout));
        assert!(line.contains(why), "{line}");
    }
    // the steps ran on the hosts, over ssh
    let rounds = std::fs::read_to_string(root.join("b1/bisect.jsonl")).unwrap();
    let first: serde_json::Value = rounds
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "round")
        .unwrap();
    let steps = std::fs::read_to_string(
        root.join(first["dir"].as_str().unwrap())
            .join("journal.jsonl"),
    )
    .unwrap();
    for (step, host) in [("build1", "h1"), ("test1", "h2")] {
        assert!(
            steps.contains(&format!("\"step\":\"{step}\",\"host\":\"{host}\""))
                || steps
                    .lines()
                    .any(|l| l.contains(&format!("\"step\":\"{step}\""))
                        && l.contains(&format!("\"host\":\"{host}\""))),
            "{step} on {host}: {steps}"
        );
    }
    for i in 1..=2 {
        let log = std::fs::read_to_string(hosts.dir.path().join(format!("sshd{i}.log")))
            .unwrap_or_default();
        assert!(log.contains("Accepted publickey"), "h{i}: {log}");
    }
    // the user's tree: HEAD, its edit and its untracked file as they were
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&repo, &["status", "--porcelain"]), status);
    assert_eq!(
        std::fs::read_to_string(repo.join("notes")).unwrap(),
        "my edit\n"
    );
    // one worktree per measured commit, though two hosts use it: in the repository's .git
    let added: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| l.starts_with("bisect: worktree "))
        .collect();
    let measured: std::collections::BTreeSet<u64> = rounds
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "round")
        .map(|e| e["commit"].as_u64().unwrap())
        .collect();
    assert_eq!(added.len(), measured.len(), "{added:?}");
    let cache = repo.join(".git/expr-bisect");
    for a in &added {
        assert!(a.contains(&cache.display().to_string()), "{a}");
        assert!(a.contains("on `h1` (exprns1)"), "{a}");
    }
    // a later bisection of the same checkout: good and bad are built already, on both hosts
    let again = bisect(
        "b2",
        &["--good", "HEAD~11", "--bad", "HEAD", "--max-runs", "16"],
    );
    assert_eq!(again.status, 3, "{}", again.stderr);
    let cached = again
        .stderr
        .lines()
        .filter(|l| l.contains("built and tested before (build cache)"))
        .count();
    assert_eq!(cached, 2, "{}", again.stderr);
    assert!(!again.stderr.contains("build and test"), "{}", again.stderr);
    assert!(again
        .stdout
        .contains("**not found** within `--max-runs 16`"));
    assert_eq!(git(&repo, &["status", "--porcelain"]), status);
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), head);
}

/// Two netns hosts whose steps (and so the noise probe) find a stand-in `nvidia-smi` through
/// their `env PATH=…`, as a cluster whose driver tools are not on the login PATH is set up;
/// on `h2` a process of another job is on the GPU. Two benches: `a` runs on `h1`, `b` on `h2`.
struct Noisy {
    hosts: Hosts,
    repo: tempfile::TempDir,
    /// The foreign process, started inside h2's namespace.
    foreign: Child,
}

const UUID1: &str = "GPU-aaaaaaaa-1111-2222-3333-444444444444";
const UUID2: &str = "GPU-bbbbbbbb-1111-2222-3333-444444444444";

impl Noisy {
    fn start(policy: &str) -> Option<Noisy> {
        let hosts = match Hosts::start() {
            Ok(h) => h,
            Err(why) => {
                common::skip(&format!("network namespaces unavailable: {why}"));
                return None;
            }
        };
        let foreign = Command::new("ip")
            .args(["netns", "exec", &format!("{}h2", hosts.tag), "sleep", "300"])
            .spawn()
            .unwrap();
        let d = hosts.dir.path();
        common::gpu::standin_nvidia_smi(&d.join("h1bin"), &common::gpu::quiet_gpu(UUID1), "");
        common::gpu::standin_nvidia_smi(
            &d.join("h2bin"),
            &common::gpu::quiet_gpu(UUID2),
            &format!("{UUID2}, {}, 1024\n", foreign.id()),
        );
        let repo = tempfile::tempdir().unwrap();
        let s = &hosts.subnet;
        let path = |h: &str| {
            format!(
                "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                d.join(format!("{h}bin")).display()
            )
        };
        let kdl = format!(
            "experiment ns {{\n    noise \"{policy}\"\n}}\n\
             host h1 ssh=\"exprns1\" ip=\"{s}.1\" repo=\"{r}\" {{\n    env PATH=\"{p1}\"\n}}\n\
             host h2 ssh=\"exprns2\" ip=\"{s}.2\" repo=\"{r}\" {{\n    env PATH=\"{p2}\"\n}}\n\
             bench a {{\n    param x 1\n    run \"true {{{{ x }}}}\" host=h1\n    sweep x 1 2\n}}\n\
             bench b {{\n    param x 1\n    run \"true {{{{ x }}}}\" host=h2\n    sweep x 1 2\n}}\n",
            r = repo.path().display(),
            p1 = path("h1"),
            p2 = path("h2"),
        );
        std::fs::write(repo.path().join("e.kdl"), kdl).unwrap();
        Some(Noisy {
            hosts,
            repo,
            foreign,
        })
    }
    fn run(&self) -> common::Ran {
        Test::new()
            .dir(self.repo.path())
            .env(
                "EXPR_SSH_CONFIG",
                self.hosts.dir.path().join("ssh_config").to_str().unwrap(),
            )
            .args(["run", "e.kdl", "--output", "out", "--grace", "1"])
            .run()
    }
    /// The stand-in's calls on host `h` (1 or 2): (arguments, `$SSH_CONNECTION`).
    fn calls(&self, h: u32) -> Vec<(String, String)> {
        common::gpu::calls(&self.hosts.dir.path().join(format!("h{h}bin")))
            .into_iter()
            .map(|(args, ssh, _)| (args, ssh))
            .collect()
    }
    /// Whether every call on host `h` came over an ssh session to that host's sshd.
    fn all_over_ssh_to(&self, h: u32) -> bool {
        let calls = self.calls(h);
        let to = format!(" {}.{h} 22", self.hosts.subnet);
        !calls.is_empty() && calls.iter().all(|(_, ssh)| ssh.ends_with(&to))
    }
}

impl Drop for Noisy {
    fn drop(&mut self) {
        let _ = self.foreign.kill();
        let _ = self.foreign.wait();
    }
}

#[test]
fn netns_noise_refuse_names_the_host_gpu_foreign_process_and_fix_standin_gpu() {
    let Some(mut n) = Noisy::start("refuse") else {
        return;
    };
    let pid = n.foreign.id();
    let ran = n.run();
    assert_eq!(ran.status, 4, "{}", ran.stderr);
    assert!(
        ran.stderr.contains(&format!(
            "error: preflight: noise \"refuse\": host `h2` GPU 0: foreign process pid {pid} (sleep, user root, 1024 MiB) is on it"
        )) && ran.stderr.contains(&format!("stop it (`kill {pid}` on `h2`)")),
        "names host, GPU, the process and its owner, and the fix: {}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains("host `h1` GPU"),
        "h1's GPU is quiet: {}",
        ran.stderr
    );
    // before any point: nothing ran, and the directory this run made is gone
    assert!(!n.repo.path().join("out").exists(), "{}", ran.stderr);
    // each host's probe ran on that host, over its ssh session
    assert!(n.all_over_ssh_to(1), "{:?}", n.calls(1));
    assert!(n.all_over_ssh_to(2), "{:?}", n.calls(2));
    // the fix is named, never run
    assert!(n.foreign.try_wait().unwrap().is_none());
}

#[test]
fn netns_noise_warn_flags_every_point_on_the_busy_host_and_records_each_machine_standin_gpu() {
    let Some(n) = Noisy::start("warn") else {
        return;
    };
    let pid = n.foreign.id();
    let ran = n.run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let said = format!("host `h2` GPU 0: foreign process pid {pid} (sleep, user root, 1024 MiB)");
    assert!(
        ran.stderr.contains(&format!("warning: noise: {said}")),
        "{}",
        ran.stderr
    );
    let out = n.repo.path().join("out");
    // every point of b (on h2) is flagged in the manifest and the journal; a's (on h1) are not
    let mut r = csv::Reader::from_path(out.join("manifest.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|x| x == name).unwrap();
    let (id, st, re) = (col("run_id"), col("status"), col("reason"));
    let rows: Vec<(String, String, String)> = r
        .records()
        .map(|x| {
            let x = x.unwrap();
            (x[id].to_string(), x[st].to_string(), x[re].to_string())
        })
        .collect();
    assert_eq!(rows.len(), 4, "{rows:?}");
    for (id, status, reason) in &rows {
        assert_eq!(status, "ok", "{id}");
        if id.starts_with("b_") {
            assert!(reason.contains(&format!("noise: {said}")), "{id}: {reason}");
        } else {
            assert!(!reason.contains("noise"), "{id}: {reason}");
        }
    }
    let journal: Vec<serde_json::Value> = std::fs::read_to_string(out.join("journal.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for p in journal.iter().filter(|e| e["event"] == "point") {
        let flagged = p["noise"]
            .as_array()
            .is_some_and(|v| v.iter().any(|x| x.as_str().unwrap().starts_with(&said)));
        assert_eq!(
            flagged,
            p["run_id"].as_str().unwrap().starts_with("b_"),
            "{p}"
        );
    }
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("Points measured under noise (2)"),
        "{summary}"
    );
    // the machine section per host: each host's own GPU and processes, and its CPU part
    let machines: Vec<&serde_json::Value> =
        journal.iter().filter(|e| e["event"] == "machine").collect();
    let of = |h: &str| {
        *machines
            .iter()
            .find(|m| m["host"] == h)
            .unwrap_or_else(|| panic!("no machine of {h}: {machines:?}"))
    };
    assert_eq!(machines.len(), 2, "{machines:?}");
    assert_eq!(of("h1")["gpus"][0]["uuid"], UUID1);
    assert!(of("h1").get("gpu_procs").is_none(), "{}", of("h1"));
    assert_eq!(of("h2")["gpus"][0]["uuid"], UUID2);
    assert_eq!(of("h2")["gpu_procs"][0]["pid"], pid as i64);
    assert_eq!(of("h2")["gpu_procs"][0]["user"], "root");
    let mem_total: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    let governor = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        .ok()
        .map(|g| g.trim().to_string());
    for h in ["h1", "h2"] {
        let cpu = &of(h)["cpu"];
        // the namespaces share this machine's kernel: its memory and governor
        assert_eq!(cpu["mem_total_kib"], mem_total, "{h}: {cpu}");
        assert_eq!(cpu["load"].as_array().map(Vec::len), Some(3), "{h}: {cpu}");
        match &governor {
            Some(g) => assert_eq!(cpu["governors"][0][0], g.as_str(), "{h}: {cpu}"),
            None => assert_eq!(cpu["governors"], serde_json::json!([]), "{h}: {cpu}"),
        }
    }
    let dep = std::fs::read_to_string(out.join("deployment.md")).unwrap();
    assert!(
        dep.contains("### host `h1`") && dep.contains("### host `h2`"),
        "{dep}"
    );
    // read on each host over its ssh session: at preflight and after each of its points
    assert!(n.all_over_ssh_to(1), "{:?}", n.calls(1));
    assert!(n.all_over_ssh_to(2), "{:?}", n.calls(2));
    let gpu_queries = |h: u32| {
        n.calls(h)
            .iter()
            .filter(|(a, _)| a.starts_with("--query-gpu"))
            .count()
    };
    assert_eq!((gpu_queries(1), gpu_queries(2)), (3, 3));
}

/// `telemetry` on two ssh hosts (issue 42): each host's sampler runs there, over its ssh
/// session, on its stand-in GPU (h1 draws 100 W, h2 200 W), and the point's energy is the two
/// together over the measured window.
#[test]
fn netns_telemetry_samples_each_host_over_its_ssh_session_standin_gpu() {
    let hosts = match Hosts::start() {
        Ok(h) => h,
        Err(why) => {
            common::skip(&format!("network namespaces unavailable: {why}"));
            return;
        }
    };
    let d = hosts.dir.path();
    for (h, watts) in [("h1", "100.00"), ("h2", "200.00")] {
        let bin = d.join(format!("{h}bin"));
        common::gpu::standin_nvidia_smi(&bin, &common::gpu::quiet_gpu(&format!("GPU-{h}")), "");
        common::gpu::standin_samples(
            &bin,
            &format!("0, GPU-{h}, {watts}, 1410, 1593, 90, 40, 1000, 50, 0x0000000000000000\n"),
            None,
        );
    }
    let repo = tempfile::tempdir().unwrap();
    let s = &hosts.subnet;
    let path = |h: &str| {
        format!(
            "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            d.join(format!("{h}bin")).display()
        )
    };
    let kdl = format!(
        "experiment ns {{\n    telemetry interval-ms=100\n}}\n\
         host h1 ssh=\"exprns1\" ip=\"{s}.1\" repo=\"{r}\" {{\n    env PATH=\"{p1}\"\n}}\n\
         host h2 ssh=\"exprns2\" ip=\"{s}.2\" repo=\"{r}\" {{\n    env PATH=\"{p2}\"\n}}\n\
         bench b {{\n    run \"sleep 1\" host=h1\n    run \"sleep 1\" host=h2\n}}\n",
        r = repo.path().display(),
        p1 = path("h1"),
        p2 = path("h2"),
    );
    std::fs::write(repo.path().join("e.kdl"), kdl).unwrap();
    let ran = Test::new()
        .dir(repo.path())
        .env("EXPR_SSH_CONFIG", d.join("ssh_config").to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out", "--grace", "1", "-q"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    let out = repo.path().join("out");
    for h in ["h1", "h2"] {
        let csv =
            std::fs::read_to_string(out.join(format!("outputs/b_r0/telemetry-{h}.csv"))).unwrap();
        assert!(
            csv.lines()
                .filter(|l| l.contains(&format!("GPU-{h}")))
                .count()
                >= 5,
            "{h}: {csv}"
        );
        // the sampler ran on that host, over its ssh session
        let calls = common::gpu::calls(&d.join(format!("{h}bin")));
        assert!(
            calls
                .iter()
                .any(|(a, ssh, _)| a.contains("-lms 100") && !ssh.is_empty()),
            "{h}: {calls:?}"
        );
    }
    let w = common::window_ms(&out);
    let e: f64 = common::metric_rows(&out, "gpu_energy_j")[0]
        .0
        .parse()
        .unwrap();
    let want = 300.0 * w / 1e3;
    assert!((e - want).abs() / want < 0.01, "{e} J against {want} J");
    common::assert_no_survivors(&out);
}
