//! commands.sh of every shipped experiment and example, run for real by bash against stand-ins:
//! no GPU runs here, so cmake, ctest, torchrun, mpirun, uv and rsync are recorders, `ssh` runs
//! the remote command on this machine, and the PS server is a small TCP listener. The script
//! runs inside a network namespace of its own that owns the experiments' host addresses, so
//! readiness probes of `10.0.x.y` never leave it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{files, rel, Test};

fn sh(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", cmd])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A network namespace with the given addresses on its loopback device; removed on drop.
struct Netns(String);

impl Netns {
    fn new(addrs: &[&str]) -> Result<Netns, String> {
        if unsafe { libc::geteuid() } != 0 {
            return Err("network namespaces need root".into());
        }
        let name = format!("xsh{}", std::process::id() % 100_000);
        if !sh(&format!("ip netns add {name}")) {
            return Err("`ip netns add` failed (iproute2 missing or no permission)".into());
        }
        let ns = Netns(name.clone());
        sh(&format!("ip netns exec {name} ip link set lo up"));
        for a in addrs {
            if !sh(&format!("ip netns exec {name} ip addr add {a}/32 dev lo")) {
                return Err(format!("cannot add {a} in the namespace"));
            }
        }
        Ok(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        sh(&format!(
            "ip netns pids {0} | xargs -r kill -9; ip netns del {0}",
            self.0
        ));
    }
}

/// out/commands.sh run again in `p`, over the run's own directory (`EXPR_FORCE=1`), for at most
/// a minute.
fn script_again(p: &Path) -> std::process::ExitStatus {
    Command::new("timeout")
        .args(["60", "bash"])
        .arg(p.join("out/commands.sh"))
        .current_dir(p)
        .env("EXPR_FORCE", "1")
        .status()
        .unwrap()
}

fn write_exec(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The stand-in programs, and a repo holding what the commands run by relative path.
fn stand_ins(root: &Path) -> PathBuf {
    let bin = root.join("bin");
    for prog in ["cmake", "ctest", "torchrun", "mpirun", "uv", "rsync"] {
        write_exec(
            &bin.join(prog),
            &format!("#!/bin/sh\nprintf '%s\\n' \"{prog} $*\" >> \"$CALLS\"\nexit 0\n"),
        );
    }
    // cmake --build DIR --target … recstore_torch_ops makes the client's ops library there
    write_exec(
        &bin.join("cmake"),
        "#!/bin/bash\nprintf '%s\\n' \"cmake $*\" >> \"$CALLS\"\nif [ \"$1\" = --build ] && [[ \" $* \" == *' recstore_torch_ops '* ]]; then mkdir -p \"$2/lib\" && : > \"$2/lib/lib_recstore_ops.so\"; fi\nexit 0\n",
    );
    // ssh: run the remote command here (the repo paths were pointed at this scratch repo)
    write_exec(
        &bin.join("ssh"),
        "#!/bin/bash\nprintf '%s\\n' \"ssh $*\" >> \"$CALLS\"\nexec bash -c \"${@: -1}\"\n",
    );
    let repo = root.join("repo");
    // the PS server: listen on the port its config names for this shard (or 15000)
    write_exec(
        &repo.join("build_release/bin/ps_server"),
        r#"#!/usr/bin/env python3
import json, socket, sys, time
args = sys.argv[1:]
port, shard = 15000, 0
if "--brpc_server_port" in args:
    port = int(args[args.index("--brpc_server_port") + 1])
elif "--config_path" in args:
    cfg = json.load(open(args[args.index("--config_path") + 1]))
    shard = int(args[args.index("--local_shard_id") + 1]) if "--local_shard_id" in args else 0
    for s in cfg["cache_ps"]["servers"]:
        if s["shard"] == shard:
            port = s["port"]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("0.0.0.0", port)); s.listen(16)
except OSError:
    pass  # another stand-in "host" on this machine already serves the port
print("ps_server listening", port, flush=True)
while True:
    time.sleep(1)
"#,
    );
    write_exec(
        &repo.join("model_zoo/rs_demo/run_mock_stress.py"),
        "#!/usr/bin/env python3\nimport os, sys\nopen(os.environ['CALLS'], 'a').write('run_mock_stress ' + ' '.join(sys.argv[1:]) + '\\n')\n",
    );
    // the quickstart's real workload
    let qs = repo.join("examples/quickstart");
    std::fs::create_dir_all(&qs).unwrap();
    for f in ["server.py", "trainer.py"] {
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("examples/quickstart")
                .join(f),
            qs.join(f),
        )
        .unwrap();
    }
    bin
}

#[test]
fn mock_gpu_commands_sh_of_every_shipped_file_runs_against_stand_ins() {
    let mut shipped = files("experiments", "kdl");
    shipped.extend(files("examples", "kdl"));
    let addrs = ["10.0.2.190", "10.0.2.191", "10.0.3.10"];
    let ns = match Netns::new(&addrs) {
        Ok(ns) => ns,
        Err(why) => {
            common::skip(&why);
            return;
        }
    };
    let root = tempfile::tempdir().unwrap();
    let bin = stand_ins(root.path());
    let repo = root.path().join("repo");
    for f in shipped {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        let file = f.display().to_string();
        // every remote host is this machine with the scratch repo; runtime dirs stay inside it
        let json = Test::new()
            .dir(&repo)
            .args(["plan", "--format", "json", &file])
            .run()
            .status(0)
            .stdout;
        let plan: serde_json::Value = serde_json::from_str(&json).unwrap();
        let mut args: Vec<String> = vec![
            "plan".into(),
            "--format".into(),
            "sh".into(),
            file.clone(),
            "--only".into(),
            "repeat=0".into(),
            "--output".into(),
            format!("out-{name}"),
        ];
        for h in plan["hosts"].as_array().unwrap() {
            if h["ssh"] != "local" {
                args.push("--set".into());
                args.push(format!(
                    "host.{}.repo={}",
                    h["name"].as_str().unwrap(),
                    repo.display()
                ));
            }
        }
        if json.contains("\"runtime-dir\"") || json.contains("rs_runtime") {
            args.push("--set".into());
            args.push(format!("runtime-dir={}/rs_runtime", repo.display()));
        }
        let script = Test::new().dir(&repo).args(&args).run();
        assert_eq!(script.status, 0, "{}: {}", rel(&f), script.stderr);
        let path = root.path().join(format!("{name}.sh"));
        std::fs::write(&path, &script.stdout).unwrap();
        let calls = root.path().join(format!("{name}.calls"));
        let out = Command::new("timeout")
            .args(["180", "ip", "netns", "exec", &ns.0, "bash"])
            .arg(&path)
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            )
            .env("CALLS", &calls)
            .current_dir("/")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{}: commands.sh exited {:?}\n{stderr}\n{}",
            rel(&f),
            out.status.code(),
            script.stdout
        );
        assert!(!stderr.contains("not ready"), "{}: {stderr}", rel(&f));
        let called = std::fs::read_to_string(&calls).unwrap_or_default();
        // the programs the plan names were called with the plan's arguments
        let want: &[&str] = match name.as_str() {
            "day0" | "day0-ablations" => &[
                "cmake -S .",
                "ctest --test-dir",
                "run_mock_stress --backend recstore",
                "run_mock_stress --backend torchrec",
            ],
            "two-node" => &[
                "ssh -p 22 -o BatchMode=yes -o ConnectTimeout=10 gpu190",
                "ssh -p 22 -o BatchMode=yes -o ConnectTimeout=10 gpu191",
                "run_mock_stress --backend recstore",
                "--nnodes 2",
                "rsync -a",
            ],
            "ep-bench-ll" => &["torchrun --standalone", "mpirun --allow-run-as-root -np 8"],
            "dataset-rt-workers" => &["uv run", "dataset_rt.run_benchmark"],
            _ => &[],
        };
        for w in want {
            assert!(
                called.contains(w),
                "{}: no `{w}` among the calls:\n{called}",
                rel(&f)
            );
        }
        if name == "quickstart" {
            let outputs = repo.join(format!("out-{name}/outputs"));
            let n = std::fs::read_dir(&outputs).map(|d| d.count()).unwrap_or(0);
            assert!(n >= 6, "the quickstart's points wrote their outputs ({n})");
        }
    }
    // nothing was written outside the scratch directory
    assert!(!Path::new("/nfs/rs_runtime/two-node").exists());
}

/// commands.sh's `wait_log`: a step that writes its ready line and ends at once (a telemetry
/// sampler on a host without GPUs says so and exits) is ready — the log is read again once the
/// process is gone. The race (the first read before the line, the end before `kill -0`) is made
/// certain by a `grep` on PATH that fails its first call.
#[test]
fn wait_log_reads_the_log_again_when_the_step_has_ended() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("t.kdl"),
        "experiment t\nbench b {\n    run \"true\"\n    repeat 1\n}\n",
    )
    .unwrap();
    let out = Test::new()
        .dir(p)
        .args(["plan", "t.kdl", "--format", "sh"])
        .run()
        .status(0)
        .stdout;
    let start = out
        .find("wait_log() {")
        .expect("commands.sh defines wait_log");
    let end = start + out[start..].find("\n}\n").unwrap() + 3;
    let bin = p.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    write_exec(
        &bin.join("grep"),
        &format!(
            "#!/bin/sh\n[ -e {0}/once ] || {{ : > {0}/once; exit 1; }}\nexec /bin/grep \"$@\"\n",
            p.display()
        ),
    );
    std::fs::write(p.join("log"), "expr-telemetry: nothing to sample\n").unwrap();
    let script = format!(
        "{}\nsh -c 'exit 0' & pid=$!; wait $pid\nwait_log {}/log '^(timestamp|expr-telemetry:)' 5 $pid",
        &out[start..end],
        p.display()
    );
    let st = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .status()
        .unwrap();
    assert!(p.join("once").exists(), "the stand-in grep was not called");
    assert!(
        st.success(),
        "wait_log gave up on a step that wrote its line and ended"
    );
}

/// commands.sh stops a server as `expr run --grace N` does: TERM its group, KILL what is left
/// after N s. A server that ignores TERM held the script for as long as it lived (40 s and
/// more: `wait` on it), and a `fail` left it running.
#[test]
fn commands_sh_kills_a_server_that_ignores_term_after_the_runs_grace() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    sh(&format!("cd {} && git init -q", p.display()));
    let tag = 43000 + std::process::id() % 997;
    std::fs::write(
        p.join("t.kdl"),
        format!(
            "experiment t\nhost local repo=\".\"\nbench b {{\n    serve s \"trap '' TERM; echo up; exec sleep {tag}\" ready-log=\"up\"\n    run \"true\"\n}}\n"
        ),
    )
    .unwrap();
    let gone = || !sh(&format!("pgrep -f '^sleep {tag}$' > /dev/null"));
    let ran = Test::new()
        .dir(p)
        .args(["run", "t.kdl", "--output", "out", "--grace", "1"])
        .run();
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(gone(), "expr run left the server");
    let script = std::fs::read_to_string(p.join("out/commands.sh")).unwrap();
    assert!(script.contains("\nGRACE=1\n"), "{script}");
    // the run's own directory is not written over: its logs would be the script's
    let log = std::fs::read(p.join("out/logs/run1-b_r0-local.log")).unwrap();
    let refused = Command::new("bash")
        .arg(p.join("out/commands.sh"))
        .current_dir(p)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("expr: out already holds results (a run's, or this script's): its logs would be written over"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert_eq!(
        std::fs::read(p.join("out/logs/run1-b_r0-local.log")).unwrap(),
        log
    );
    let t0 = std::time::Instant::now();
    let st = script_again(p);
    let took = t0.elapsed();
    let left = !gone();
    let _ = Command::new("pkill")
        .args(["-KILL", "-f", &format!("^sleep {tag}$")])
        .status();
    assert!(st.success(), "commands.sh: {st:?} after {took:?}");
    assert!(!left, "commands.sh left the server");
    assert!(
        took < std::time::Duration::from_secs(15),
        "commands.sh waited {took:?} for a server that ignores TERM"
    );
}

/// A run with `--skip-build --skip-tests` writes a commands.sh that skips them too (it ran the
/// build and the test the run had left out): their commands stand as comments, and the script
/// runs what the run ran.
#[test]
fn commands_sh_of_a_run_that_skipped_build_and_tests_skips_them_too() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    sh(&format!("cd {} && git init -q", p.display()));
    std::fs::write(
        p.join("s.kdl"),
        "experiment s\nhost local repo=\".\"\nbench b {\n    build \"touch BUILT\"\n    test \"touch TESTED\"\n    run \"touch RAN; echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    Test::new()
        .dir(p)
        .args([
            "run",
            "s.kdl",
            "--output",
            "out",
            "--skip-build",
            "--skip-tests",
        ])
        .run()
        .status(0);
    assert!(!p.join("BUILT").exists() && !p.join("TESTED").exists());
    std::fs::remove_file(p.join("RAN")).unwrap();
    let script = std::fs::read_to_string(p.join("out/commands.sh")).unwrap();
    assert!(
        script.contains("# build build1 on local: skipped (--skip-build), as `expr run` did; its command was:\n# touch BUILT"),
        "{script}"
    );
    assert!(script.contains("skipped (--skip-tests)"), "{script}");
    let st = script_again(p);
    assert!(st.success(), "commands.sh: {st:?}");
    assert!(p.join("RAN").exists(), "the script ran the point");
    assert!(
        !p.join("BUILT").exists() && !p.join("TESTED").exists(),
        "the script ran what the run skipped"
    );
    // without the flags, the run's commands.sh builds and tests, as the run does
    Test::new()
        .dir(p)
        .args(["run", "s.kdl", "--output", "out2"])
        .run()
        .status(0);
    let script = std::fs::read_to_string(p.join("out2/commands.sh")).unwrap();
    assert!(!script.contains("skipped ("), "{script}");
}

/// The two variables `expr run` puts in every step's environment (the result directory, the
/// point's mark) are set by commands.sh too, and the plan says them (helper 48: `env | sort`
/// differed between the run and the script).
#[test]
fn commands_sh_sets_the_variables_the_run_gives_every_step() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("v.kdl"),
        "experiment v\nbench b {\n    run \"printf '%s\\\\n' \\\"$EXPR_RESULT_DIR\\\" \\\"$EXPR_MARK\\\" >> vars.txt; echo v=1\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}\n",
    )
    .unwrap();
    let plan = Test::new().dir(p).args(["plan", "v.kdl"]).run().status(0);
    assert!(
        plan.stdout.contains("EXPR_RESULT_DIR=") && plan.stdout.contains("EXPR_MARK="),
        "{}",
        plan.stdout
    );
    Test::new()
        .dir(p)
        .args(["run", "v.kdl", "--output", "out"])
        .run()
        .status(0);
    let ran = std::fs::read_to_string(p.join("vars.txt")).unwrap();
    std::fs::remove_file(p.join("vars.txt")).unwrap();
    assert!(script_again(p).success());
    let again = std::fs::read_to_string(p.join("vars.txt")).unwrap();
    let (ran, again): (Vec<&str>, Vec<&str>) = (ran.lines().collect(), again.lines().collect());
    let out = p.join("out").canonicalize().unwrap();
    assert_eq!(ran[0], out.to_str().unwrap(), "{ran:?}");
    assert_eq!(again[0], ran[0], "the script's result directory: {again:?}");
    assert!(ran[1].ends_with(":b_r0;"), "{ran:?}");
    assert!(
        again[1].starts_with("commands.sh-") && again[1].ends_with(":b_r0;"),
        "{again:?}"
    );
}

/// Ctrl-C (SIGINT to the script's process group, as a terminal sends it) ends commands.sh
/// with 130 and stops what it started, during a foreground build too (bash held the signal
/// until the build ended, then went on with every point); a failed build exits 3, as the run.
#[test]
fn commands_sh_stops_on_ctrl_c_during_a_build_and_exits_as_the_run() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    sh(&format!("cd {} && git init -q", p.display()));
    let tag = 44000 + std::process::id() % 997;
    std::fs::write(
        p.join("t.kdl"),
        format!("experiment t\nhost local repo=\".\"\nbench b {{\n    build \"sleep {tag}\"\n    run \"true\"\n}}\n"),
    )
    .unwrap();
    let script = Test::new()
        .dir(p)
        .args(["plan", "t.kdl", "--format", "sh", "--output", "out"])
        .run()
        .status(0)
        .stdout;
    std::fs::write(p.join("c.sh"), &script).unwrap();
    let alive = || sh(&format!("pgrep -f '^sleep {tag}$' > /dev/null"));
    let mut cmd = Command::new("setsid");
    cmd.args(["bash", "c.sh"]).current_dir(p);
    // as from a terminal: a harness that started the tests in the background left SIGINT
    // ignored, and a shell cannot trap a signal ignored when it starts
    use std::os::unix::process::CommandExt;
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        })
    };
    let mut child = cmd.spawn().unwrap();
    let t0 = std::time::Instant::now();
    while !alive() {
        assert!(t0.elapsed().as_secs() < 20, "the build never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let t1 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t1.elapsed().as_secs() > 20 {
            let _ = child.kill();
            let _ = Command::new("pkill")
                .args(["-KILL", "-f", &format!("^sleep {tag}$")])
                .status();
            panic!("commands.sh went on after Ctrl-C");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let left = alive();
    let _ = Command::new("pkill")
        .args(["-KILL", "-f", &format!("^sleep {tag}$")])
        .status();
    assert_eq!(status.code(), Some(130));
    assert!(!left, "the build outlived commands.sh");
    // a failed build: 3, as `expr run`
    std::fs::write(
        p.join("c.sh"),
        script.replace(&format!("sleep {tag}"), "exit 2"),
    )
    .unwrap();
    let st = Command::new("bash")
        .arg("c.sh")
        .current_dir(p)
        .env("EXPR_FORCE", "1")
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(3));
}

/// What a build, a cleanup or a client step leaves running in its group (`sleep 9 &`) is
/// stopped with it by commands.sh, as `expr run` stops it (the script exited 0 and left them).
#[test]
fn commands_sh_stops_what_a_step_left_running_in_its_group() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    sh(&format!("cd {} && git init -q", p.display()));
    let tag = 44000 + std::process::id() % 997;
    std::fs::write(
        p.join("t.kdl"),
        format!(
            "experiment t\nhost local repo=\".\"\nbench b {{\n    build \"sleep {tag}.1 & echo built\"\n    run \"sleep {tag}.2 & echo v=1\"\n    cleanup \"sleep {tag}.3 & true\"\n    collect \"regex\" pattern=\"v=([0-9]+)\"\n}}\n"
        ),
    )
    .unwrap();
    let alive = || sh(&format!("pgrep -f '^sleep {tag}' > /dev/null"));
    let script = Test::new()
        .dir(p)
        .args(["plan", "t.kdl", "--format", "sh", "--output", "out"])
        .run()
        .status(0)
        .stdout;
    std::fs::write(p.join("c.sh"), &script).unwrap();
    let st = Command::new("timeout")
        .args(["60", "bash", "c.sh"])
        .current_dir(p)
        .status()
        .unwrap();
    let left = alive();
    let _ = Command::new("pkill")
        .args(["-KILL", "-f", &format!("^sleep {tag}")])
        .status();
    assert!(st.success(), "{st:?}");
    assert!(!left, "commands.sh left a step's background child running");
    // and so does `expr run`
    Test::new()
        .dir(p)
        .args(["run", "t.kdl", "--output", "ran"])
        .run()
        .status(0);
    let left = alive();
    let _ = Command::new("pkill")
        .args(["-KILL", "-f", &format!("^sleep {tag}")])
        .status();
    assert!(!left, "expr run left a step's background child running");
}
