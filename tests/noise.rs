//! Noise checks (issue 27): the machine probe at preflight, the `noise` policy, the check
//! between points, the machine section of journal, deployment.md and reports, and compare.
//!
//! There is no GPU and no InfiniBand here: `mock_gpu_…` / `stand_in_…` tests put stand-in
//! `nvidia-smi` / `ibstat` scripts on PATH that print NVIDIA's documented CSV forms
//! (`--query-gpu=… --format=csv,noheader,nounits`, `--query-compute-apps=…`) and point the
//! probe at a sysfs/procfs directory of their own (EXPR_SYSFS_ROOT). The CPU part is also
//! checked against this machine's real /proc and /sys (`real_…`), locally and over ssh.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use common::Test;

use common::gpu::{standin_nvidia_smi, write_exec, UUID};

fn gpu_line(sm: u32, app: u32, throttle: &str, persistence: &str, mig: &str) -> String {
    common::gpu::gpu_line_of(UUID, sm, app, throttle, persistence, mig)
}

/// A result-directory workspace with a stand-in nvidia-smi on PATH.
struct Work {
    dir: tempfile::TempDir,
    /// A process that stands for another user's job on the GPU.
    foreign: Option<Child>,
}

impl Work {
    fn new(kdl_body: &str) -> Work {
        let dir = tempfile::tempdir().unwrap();
        // answers as nvidia-smi does, from files the test writes
        standin_nvidia_smi(
            &dir.path().join("bin"),
            &gpu_line(1410, 1410, "0x0000000000000000", "Enabled", "Disabled"),
            "",
        );
        let kdl = format!(
            "experiment t\nhost local repo=\"{}\"\n{kdl_body}",
            dir.path().display()
        );
        std::fs::write(dir.path().join("e.kdl"), kdl).unwrap();
        Work { dir, foreign: None }
    }
    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }
    fn path_var(&self) -> String {
        format!(
            "{}:{}",
            self.bin().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }
    /// Start a foreign process and list it on the GPU; its pid.
    fn foreign_process(&mut self) -> u32 {
        let c = Command::new("sleep").arg("300").spawn().unwrap();
        let pid = c.id();
        self.foreign = Some(c);
        pid
    }
    fn run(&self, out: &str, extra: &[&str]) -> common::Ran {
        Test::new()
            .dir(self.dir.path())
            .env("PATH", &self.path_var())
            .args(["run", "e.kdl", "--output", out, "--grace", "1"])
            .args(extra)
            .run()
    }
    fn out(&self, out: &str) -> PathBuf {
        self.dir.path().join(out)
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        if let Some(c) = &mut self.foreign {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The journal's machine events.
fn machines(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("journal.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "machine")
        .collect()
}

/// manifest.csv's (run_id, status, reason) rows.
fn manifest(out: &Path) -> Vec<(String, String, String)> {
    common::csv_by_name(&out.join("manifest.csv"))
        .into_iter()
        .map(|mut r| {
            let mut take = |c: &str| r.remove(c).expect("a manifest column");
            (take("run_id"), take("status"), take("reason"))
        })
        .collect()
}

const BENCH: &str = "bench b {\n  param x 1\n  run \"true {{ x }}\"\n  sweep x 1 2\n}\n";

#[test]
fn mock_gpu_foreign_process_refuses_before_any_point() {
    let mut w = Work::new(BENCH);
    // the policy from the experiment file
    let kdl = std::fs::read_to_string(w.dir.path().join("e.kdl"))
        .unwrap()
        .replacen(
            "experiment t\n",
            "experiment t {\n    noise \"refuse\"\n}\n",
            1,
        );
    std::fs::write(w.dir.path().join("e.kdl"), kdl).unwrap();
    let pid = w.foreign_process();
    std::fs::write(w.bin().join("apps.csv"), format!("{UUID}, {pid}, 1024\n")).unwrap();
    let ran = w.run("out", &[]).status(4);
    assert!(
        ran.stderr.contains(&format!(
            "noise \"refuse\": host `local` GPU 0: foreign process pid {pid} (sleep, user "
        )) && ran.stderr.contains(&format!("`kill {pid}` on `local`")),
        "names host, GPU, what and the fix: {}",
        ran.stderr
    );
    assert!(!w.out("out").exists(), "nothing ran: {}", ran.stderr);
    // the fix is named, never run
    assert!(w.foreign.as_mut().unwrap().try_wait().unwrap().is_none());
    // `--noise warn` overrides the file: the run goes on
    w.run("out", &["--noise", "warn"]).status(0);
}

#[test]
fn mock_gpu_foreign_process_warns_and_flags_every_affected_point() {
    let mut w = Work::new(BENCH);
    let pid = w.foreign_process();
    std::fs::write(w.bin().join("apps.csv"), format!("{UUID}, {pid}, 1024\n")).unwrap();
    let ran = w.run("out", &[]).status(0);
    assert!(
        ran.stderr.contains(&format!(
            "warning: noise: host `local` GPU 0: foreign process pid {pid}"
        )),
        "{}",
        ran.stderr
    );
    let out = w.out("out");
    let rows = manifest(&out);
    assert_eq!(rows.len(), 2);
    for (id, status, reason) in &rows {
        assert_eq!(status, "ok", "{id}");
        assert!(
            reason.contains(&format!(
                "noise: host `local` GPU 0: foreign process pid {pid}"
            )),
            "{id}: {reason}"
        );
    }
    let m = machines(&out);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0]["host"], "local");
    assert_eq!(m[0]["gpus"][0]["sm_mhz"], 1410.0);
    assert_eq!(m[0]["gpu_procs"][0]["pid"], pid as i64);
    assert_eq!(m[0]["cuda"], "12.2");
    let dep = std::fs::read_to_string(out.join("deployment.md")).unwrap();
    assert!(
        dep.contains("## machine (preflight)")
            && dep.contains("GPU 0 NVIDIA A100-SXM4-80GB: driver 535.129.03"),
        "{dep}"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("### Machine (recorded at preflight)")
            && summary.contains("Points measured under noise (2)"),
        "{summary}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h3>Machine</h3>") && html.contains("2 point(s) measured under noise"));
}

#[test]
fn mock_gpu_between_points_a_process_that_comes_later_flags_the_points_after_it() {
    let mut w = Work::new("");
    let pid = w.foreign_process();
    let bin = w.bin();
    // point x=2 (as another job would) takes the GPU and heats it up
    let body = format!(
        "bench b {{\n  param x 1\n  run \"if [ {{{{ x }}}} = 2 ]; then echo '{UUID}, {pid}, 512' > {apps}; echo '{hot}' > {gpus}; fi\"\n  sweep x 1 2 3\n}}\n",
        apps = bin.join("apps.csv").display(),
        gpus = bin.join("gpus.csv").display(),
        hot = gpu_line(1200, 1410, "0x0000000000000040", "Enabled", "Disabled").trim()
    );
    let kdl = std::fs::read_to_string(w.dir.path().join("e.kdl")).unwrap() + &body;
    std::fs::write(w.dir.path().join("e.kdl"), kdl).unwrap();
    w.run("out", &[]).status(0);
    let rows = manifest(&w.out("out"));
    let reason = |x: &str| {
        rows.iter()
            .find(|r| r.0 == format!("b_x{x}_r0"))
            .unwrap()
            .2
            .clone()
    };
    assert_eq!(reason("1"), "", "quiet before and after");
    for x in ["2", "3"] {
        let r = reason(x);
        assert!(
            r.contains(&format!("foreign process pid {pid}"))
                && r.contains("clocks throttled (hw_thermal_slowdown; SM 1200 MHz)"),
            "x={x}: {r}"
        );
    }
}

#[test]
fn mock_gpu_locked_clocks_mig_and_persistence_refuse_with_their_fix_commands() {
    let w = Work::new(BENCH);
    let kdl = std::fs::read_to_string(w.dir.path().join("e.kdl"))
        .unwrap()
        .replacen(
            "experiment t\n",
            "experiment t {\n    gpu-clocks-locked #true\n}\n",
            1,
        );
    std::fs::write(w.dir.path().join("e.kdl"), kdl).unwrap();
    std::fs::write(
        w.bin().join("gpus.csv"),
        gpu_line(1980, 1410, "0x0000000000000000", "Disabled", "Enabled")
            + "1, NVIDIA A100-SXM4-80GB, GPU-other, [N/A], [N/A], [Not Supported], , , [N/A], 30, [N/A], [N/A], [N/A], 535.129.03\n",
    )
    .unwrap();
    let ran = w.run("out", &["--noise", "refuse"]).status(4);
    for want in [
        "host `local` GPU 0: MIG mode is on (the run gets a slice, not the GPU) — `nvidia-smi -i 0 -mig 0`",
        "host `local` GPU 0: persistence mode is off (locked clocks are lost when the driver unloads) — `nvidia-smi -i 0 -pm 1`",
        "host `local` GPU 0: `gpu-clocks-locked #true`, but its SM clock is 1980 MHz, not its application clock 1410 MHz — `nvidia-smi -i 0 -lgc 1410,1410`",
    ] {
        assert!(ran.stderr.contains(want), "{want}\n{}", ran.stderr);
    }
    // GPU 1 reports nothing readable: said, not refused
    assert!(
        ran.stderr.contains("warning: noise: host `local` GPU 1: `gpu-clocks-locked #true`, but nvidia-smi reports no SM or application clock"),
        "{}",
        ran.stderr
    );
    // `off` records the machine and runs
    w.run("out", &["--noise", "off"]).status(0);
    assert_eq!(machines(&w.out("out"))[0]["gpus"][0]["mig"], true);
}

#[test]
fn mock_gpu_compare_says_the_clocks_differ_above_its_verdicts() {
    let w = Work::new(BENCH);
    w.run("a", &[]).status(0);
    std::fs::write(
        w.bin().join("gpus.csv"),
        gpu_line(1980, 1410, "0x0", "Enabled", "Disabled"),
    )
    .unwrap();
    w.run("b", &[]).status(0);
    let ran = Test::new()
        .dir(w.dir.path())
        .args(["compare", "a", "b"])
        .run()
        .status(0);
    let o = ran.stdout;
    let diff = o
        .find("| `local` | clocks | GPU 0 SM clock | 1410 MHz | 1980 MHz |")
        .unwrap_or_else(|| panic!("{o}"));
    let verdicts = o.find("| bench | lane | point |").unwrap();
    assert!(diff < verdicts, "above the verdicts: {o}");
    assert!(!o.contains("not comparable"), "{o}");
    // the history of the two runs says what changed in the machine between them
    let h = Test::new()
        .dir(w.dir.path())
        .args(["history", "t"])
        .run()
        .status(0)
        .stdout;
    assert!(
        h.contains("The machines changed between runs")
            && h.contains("host `local`: GPU 0 SM clock 1410 MHz → 1980 MHz"),
        "{h}"
    );
    // declared relevant: the verdicts are not comparable
    let kdl = std::fs::read_to_string(w.dir.path().join("e.kdl"))
        .unwrap()
        .replacen(
            "experiment t\n",
            "experiment t {\n    comparable-on \"clocks\" \"driver\"\n}\n",
            1,
        );
    std::fs::write(w.dir.path().join("e.kdl"), kdl).unwrap();
    w.run("c", &[]).status(0);
    let o = Test::new()
        .dir(w.dir.path())
        .args(["compare", "a", "c"])
        .run()
        .status(0)
        .stdout;
    assert!(
        o.contains("| `local` | clocks ⛔ | GPU 0 SM clock | 1410 MHz | 1980 MHz |"),
        "{o}"
    );
    assert_eq!(
        o.matches("| not comparable (clocks differ) |").count(),
        2,
        "{o}"
    );
    let json = Test::new()
        .dir(w.dir.path())
        .args(["compare", "a", "c", "--format", "json"])
        .run()
        .stdout;
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["machines"]["differences"][0]["aspect"], "clocks");
    // a gate cannot pass over what its experiment says is not comparable
    let gate = Test::new()
        .dir(w.dir.path())
        .args([
            "compare",
            "a",
            "c",
            "--fail-on-regression",
            "5",
            "--format",
            "github",
            "--junit",
            "gate.xml",
        ])
        .run()
        .status(expr::util::exit_codes::REGRESSION);
    // its JUnit cases fail as not comparable, not as a regression (helper 75)
    let xml = std::fs::read_to_string(w.dir.path().join("gate.xml")).unwrap();
    assert_eq!(
        xml.matches(
            "<failure message=\"not comparable (clocks differ) (the gate cannot judge it)\""
        )
        .count(),
        2,
        "{xml}"
    );
    assert!(!xml.contains("regression:"), "{xml}");
    assert!(
        gate.stdout.starts_with("### ❌ expr compare"),
        "{}",
        gate.stdout
    );
    assert!(
        gate.stdout
            .contains("2 not comparable (clocks differ, declared `comparable-on`: the gate fails)"),
        "{}",
        gate.stdout
    );
    assert_eq!(
        gate.stderr
            .matches("(the experiment's `comparable-on`): the gate cannot judge it")
            .count(),
        2,
        "{}",
        gate.stderr
    );
    // without a gate: said, not a plain ✅
    let md = Test::new()
        .dir(w.dir.path())
        .args(["compare", "a", "c", "--format", "github"])
        .run()
        .status(0);
    assert!(
        md.stdout.starts_with("### ⚠️ expr compare"),
        "{}",
        md.stdout
    );
}

#[test]
fn stand_in_sysfs_and_ibstat_are_read() {
    let w = Work::new(BENCH);
    let root = w.dir.path().join("root");
    let put = |p: &str, text: &str| {
        let f = root.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, text).unwrap();
    };
    // the kernel's formats
    put(
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
        "powersave\n",
    );
    put(
        "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
        "powersave\n",
    );
    put("sys/devices/system/cpu/intel_pstate/no_turbo", "0\n");
    put("proc/loadavg", "0.10 0.20 0.30 1/100 4242\n");
    put("proc/meminfo", "MemTotal:       65536000 kB\nMemFree:        1000 kB\nMemAvailable:   32768000 kB\nSwapTotal:       1048576 kB\nSwapFree:         524288 kB\n");
    put(
        "sys/kernel/mm/transparent_hugepage/enabled",
        "[always] madvise never\n",
    );
    put("sys/devices/system/node/node0/cpulist", "0-1\n");
    put("sys/devices/system/node/node1/cpulist", "2-3\n");
    write_exec(
        &w.bin().join("ibstat"),
        "#!/bin/sh\nprintf \"CA 'mlx5_0'\\n\\tCA type: MT4123\\n\\tNumber of ports: 1\\n\\tPort 1:\\n\\t\\tState: Active\\n\\t\\tPhysical state: LinkUp\\n\\t\\tRate: 200\\n\"\n",
    );
    let ran = Test::new()
        .dir(w.dir.path())
        .env("PATH", &w.path_var())
        .env("EXPR_SYSFS_ROOT", root.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    for want in [
        "host `local`: CPU governor is powersave — `cpupower frequency-set -g performance`",
        "host `local`: CPU turbo/boost is on",
        "host `local`: 512.0 MiB of swap in use",
    ] {
        assert!(ran.stderr.contains(want), "{want}\n{}", ran.stderr);
    }
    let m = &machines(&w.out("out"))[0];
    assert_eq!(m["cpu"]["governors"], serde_json::json!([["powersave", 2]]));
    assert_eq!(m["cpu"]["load"], serde_json::json!([0.1, 0.2, 0.3]));
    assert_eq!(m["cpu"]["mem_total_kib"], 65536000);
    assert_eq!(m["cpu"]["numa_nodes"], 2);
    assert_eq!(m["cpu"]["thp"], "always");
    assert_eq!(m["ib"][0]["ca"], "mlx5_0");
    assert_eq!(m["ib"][0]["state"], "Active");
}

/// This machine's governor as the kernel says it, or None when it has no cpufreq.
fn real_governor() -> Option<String> {
    std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        .ok()
        .map(|s| s.trim().to_string())
}

fn real_mem_total() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

fn check_real_cpu(m: &serde_json::Value, out: &Path) {
    match real_governor() {
        Some(g) => assert_eq!(m["cpu"]["governors"][0][0], g.as_str(), "{m}"),
        None => {
            assert_eq!(m["cpu"]["governors"], serde_json::json!([]), "{m}");
            let dep = std::fs::read_to_string(out.join("deployment.md")).unwrap();
            assert!(
                dep.contains("governor — (no cpufreq scaling_governor in /sys)"),
                "{dep}"
            );
        }
    }
    assert_eq!(m["cpu"]["mem_total_kib"], real_mem_total(), "{m}");
    let load = m["cpu"]["load"].as_array().expect("a load average");
    assert_eq!(load.len(), 3);
    assert!(load.iter().all(|x| x.as_f64().is_some_and(|x| x >= 0.0)));
    assert!(m["cpu"]["mem_available_kib"]
        .as_u64()
        .is_some_and(|a| a > 0 && a <= real_mem_total()));
}

#[test]
fn real_cpu_part_reports_this_machines_governor_load_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("e.kdl"),
        format!(
            "experiment t\nhost local repo=\"{}\"\n{BENCH}",
            dir.path().display()
        ),
    )
    .unwrap();
    Test::new()
        .dir(dir.path())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    let out = dir.path().join("out");
    let m = &machines(&out)[0];
    check_real_cpu(m, &out);
    if !Path::new("/usr/bin/nvidia-smi").exists() {
        assert!(m.get("gpus").is_none(), "no GPU here: {m}");
        assert!(m["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "nvidia-smi: not available"));
    }
}

#[test]
fn real_cpu_part_over_ssh() {
    let Some(sshd) = common::sshd::Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("e.kdl"),
        format!(
            "experiment t\nhost local repo=\"{d}\"\nhost far ssh=\"exprtest\" ssh-port={p} ip=\"127.0.0.1\" repo=\"{d}\"\nbench b {{\n  run \"true\" host=far\n}}\n",
            d = dir.path().display(),
            p = sshd.port
        ),
    )
    .unwrap();
    Test::new()
        .dir(dir.path())
        .env("EXPR_SSH_CONFIG", sshd.config.to_str().unwrap())
        .args(["run", "e.kdl", "--output", "out"])
        .run()
        .status(0);
    let out = dir.path().join("out");
    let m = machines(&out);
    let far = m
        .iter()
        .find(|m| m["host"] == "far")
        .expect("far's machine");
    check_real_cpu(far, &out);
}

/// The English words (three letters or more) left in `text` once its facts are taken out: the
/// spans in backticks and each of `facts`.
fn english_words(text: &str, facts: &[&str]) -> Vec<String> {
    let mut t = text.to_string();
    for f in facts {
        t = t.replace(f, " ");
    }
    let mut bare = String::new();
    let mut quoted = false;
    for c in t.chars() {
        if c == '`' {
            quoted = !quoted;
            bare.push(' ');
        } else if !quoted {
            bare.push(c);
        }
    }
    bare.split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() >= 3 && !["GPU", "pid", "MiB"].contains(w))
        .map(String::from)
        .collect()
}

/// The text of summary.md's missing-points paragraph.
fn missing_para(summary: &str) -> String {
    summary
        .lines()
        .find(|l| l.starts_with("缺失的点（") || l.starts_with("Points without data ("))
        .unwrap_or_else(|| panic!("no missing points: {summary}"))
        .to_string()
}

/// Drop the reasons as data from a journal, as an expr before them wrote it.
fn as_old_journal(out: &Path) {
    let p = out.join("journal.jsonl");
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines = Vec::new();
    for l in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        let o = v.as_object_mut().unwrap();
        for k in ["cause", "noise_of", "notes_of"] {
            o.shift_remove(k);
        }
        lines.push(v.to_string());
    }
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    assert!(!std::fs::read_to_string(&p).unwrap().contains("\"cause\""));
}

/// Issue 25: no report mixes languages. A run's reasons — a client that failed, a server that
/// was not ready, a point without data, a foreign process on the GPU — are the run's English in
/// manifest.csv, and a Chinese report says each in Chinese with its facts (command, log path,
/// exit code, port, pid) verbatim. `--lang en` gives the English text the run wrote, byte for
/// byte as from a journal without the reasons as data; such an older journal still reports.
#[test]
fn mock_gpu_a_chinese_report_says_every_reason_in_chinese_with_its_facts_verbatim() {
    let port = common::sshd::free_port();
    let body = format!(
        "bench b {{\n  lane ok\n  lane bad fail=1\n  lane nodata nd=1\n  param fail 0\n  param nd 0\n  run \"if [ {{{{ fail }}}} = 1 ]; then echo boom >&2; exit 3; fi; if [ {{{{ nd }}}} = 1 ]; then echo nothing; else echo lat=5; fi\"\n  collect \"regex\" pattern=\"lat=([0-9.]+)\"\n}}\nbench s {{\n  serve \"srv\" \"sleep 30\" host=local port={port} ready-timeout=1\n  run \"echo lat=1\"\n  collect \"regex\" pattern=\"lat=([0-9.]+)\"\n}}\n"
    );
    let mut w = Work::new(&body);
    let pid = w.foreign_process();
    std::fs::write(w.bin().join("apps.csv"), format!("{UUID}, {pid}, 1024\n")).unwrap();
    w.run("out", &["--lang", "zh"]).status(3);
    let out = w.out("out");
    let rows = manifest(&out);
    let row = |id: &str| rows.iter().find(|r| r.0 == id).unwrap().clone();
    // the manifest keeps the run's English, the facts within it
    let bad = row("bad_r0").2;
    let command = bad
        .split_once("; command: ")
        .and_then(|(_, r)| r.split_once("; log: "))
        .map(|(c, _)| c.to_string())
        .unwrap_or_else(|| panic!("{bad}"));
    assert!(
        command.contains("exit 3") && command.contains(">&2"),
        "{command}"
    );
    let log = "out/logs/run1-bad_r0-local.log";
    assert!(
        bad.starts_with(&format!(
            "client `run1-bad_r0` on `local` failed (exit 3); command: {command}; log: {log}"
        )),
        "{bad}"
    );
    let no_data = row("nodata_r0").2;
    let collector = no_data.split("; noise: ").next().unwrap().to_string();
    assert!(
        collector.contains("out/logs/run1-nodata_r0-local.log"),
        "{collector}"
    );
    assert!(row("s_r0")
        .2
        .starts_with("server `srv-s_r0` on `local` was not ready within 1 s"));

    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let missing = missing_para(&summary);
    for want in [
        format!("bad_r0（失败：客户端 `run1-bad_r0` 在 `local` 上失败（退出码 3）；命令：{command}；日志：{log}）"),
        format!("nodata_r0（无数据：收集器原文「{collector}」）"),
        format!("s_r0（失败：服务 `srv-s_r0` 在 `local` 上 1 秒内未就绪（127.0.0.1:{port} 没有接受连接）；日志：out/logs/srv-s_r0-local.log）"),
    ] {
        assert!(missing.contains(&want), "lacks {want}\nin {missing}");
    }
    let facts = [
        command.as_str(),
        &collector,
        "out/logs/srv-s_r0-local.log",
        log,
        "bad_r0",
        "nodata_r0",
        "s_r0",
    ];
    let words = english_words(&missing, &facts);
    assert!(words.is_empty(), "English {words:?} in {missing}");
    // the noise: each point's note, and the machine's, in Chinese with pid and user verbatim
    let noisy: Vec<&str> = summary
        .lines()
        .filter(|l| l.starts_with("- `") && l.contains(&format!("pid {pid}")))
        .collect();
    assert_eq!(noisy.len(), 4, "{summary}");
    let user = std::env::var("USER").unwrap_or_default();
    for l in &noisy {
        assert!(
            l.contains(&format!(
                "：主机 `local` GPU 0：外来进程 pid {pid}（sleep，用户 "
            )),
            "{l}"
        );
        assert!(english_words(l, &["sleep", &user]).is_empty(), "{l}");
    }
    let notes: Vec<&str> = summary
        .lines()
        .filter(|l| l.starts_with("- 注："))
        .collect();
    assert!(
        notes.iter().any(
            |l| l.contains(&format!("干扰：主机 `local` GPU 0：外来进程 pid {pid}"))
                && l.contains(&format!("`kill {pid}`"))
        ),
        "{notes:#?}"
    );
    for l in &notes {
        for en in [
            "noise:",
            "foreign process",
            "every number",
            "load average",
            "not available",
            "note:",
        ] {
            assert!(!l.contains(en), "`{en}` in {l}");
        }
    }
    // report.html's failed-points table says the same
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;")
    };
    assert!(
        html.contains(&format!(
            "<td>客户端 `run1-bad_r0` 在 `local` 上失败（退出码 3）；命令：{}；日志：{log}</td>",
            esc(&command)
        )),
        "{html}"
    );
    // a collector's own diagnostic is quoted as recorded, marked as a quotation
    assert!(
        html.contains(&format!("<td>收集器原文「{}」", esc(&collector))),
        "{html}"
    );
    for en in [
        "failed (exit",
        "was not ready within",
        "accepted no connection",
        "foreign process",
        "noise:",
    ] {
        assert!(!html.contains(en), "`{en}` in the Chinese report.html");
    }

    // `--lang en`: the run's English, as an expr before the reasons were data reported it
    let report = |lang: &[&str]| {
        Test::new()
            .dir(w.dir.path())
            .args(["report", "out"])
            .args(lang)
            .run()
            .status(3);
        (
            std::fs::read_to_string(out.join("summary.md")).unwrap(),
            std::fs::read_to_string(out.join("report.html")).unwrap(),
        )
    };
    let (en_md, en_html) = report(&["--lang", "en"]);
    assert!(
        missing_para(&en_md).contains(&format!(
            "bad_r0 (failed: client `run1-bad_r0` on `local` failed (exit 3); command: {command}; log: {log})"
        )),
        "{en_md}"
    );
    assert_eq!(common::cjk(&en_md), None, "{en_md}");
    as_old_journal(&out);
    let (old_md, old_html) = report(&["--lang", "en"]);
    assert_eq!(en_md, old_md);
    assert_eq!(en_html, old_html);
    // an older journal in Chinese: its English reasons as they were, the rest Chinese
    let (zh_md, _) = report(&[]);
    let missing = missing_para(&zh_md);
    assert!(
        missing.contains("bad_r0（失败：client `run1-bad_r0` on `local` failed (exit 3)"),
        "{missing}"
    );
}

/// A build that failed leaves every point not run: a Chinese report says so in Chinese, with the
/// step, host, exit code and log.
#[test]
fn a_failed_build_is_said_in_chinese_in_a_chinese_report() {
    let w = Work::new("bench b {\n  build \"echo broken >&2; exit 2\" host=local\n  run \"echo lat=1\"\n  collect \"regex\" pattern=\"lat=([0-9.]+)\"\n  lane a\n}\n");
    w.run("out", &["--lang", "zh"]).status(3);
    let out = w.out("out");
    let (id, status, reason) = manifest(&out).remove(0);
    assert_eq!((id.as_str(), status.as_str()), ("a_r0", "failed"));
    assert!(
        reason.starts_with("not run: build `build1` on `local` failed (exit 2); stopping before any benchmark run; log: "),
        "{reason}"
    );
    let log = reason.rsplit_once("; log: ").unwrap().1.to_string();
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let missing = missing_para(&summary);
    let want = format!("a_r0（失败：未运行：构建 `build1` 在 `local` 上失败（退出码 2）；在任何基准运行之前停止；日志：{log}）");
    assert!(missing.contains(&want), "lacks {want}\nin {missing}");
    assert!(english_words(&missing, &[&log]).is_empty(), "{missing}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("<td>未运行：构建 `build1` 在 `local` 上失败（退出码 2）；在任何基准运行之前停止；日志："),
        "{html}"
    );
    assert!(!html.contains("not run:") && !html.contains("stopping before"));
}
