//! `expr bisect` on a real git repository the test makes (tests/fixtures/bisect/make-repo.sh):
//! 12 commits, commit 7 slows bench.py by 15 % under ±20 % jitter, commit 5 does not build and
//! commit 8 fails its test gate.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::Test;

struct Repo {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    repo: PathBuf,
    file: PathBuf,
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

fn repo(extra_host: &str) -> Repo {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let repo = root.join("repo");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bisect/make-repo.sh");
    let o = Command::new("bash")
        .arg(&script)
        .arg(&repo)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    std::fs::create_dir(root.join("noise")).unwrap();
    let file = root.join("exp.kdl");
    std::fs::write(
        &file,
        format!(
            r#"experiment slowdown {{
    description "a 15 % slowdown buried in ±20 % noise"
}}

host local repo="{}"
{extra_host}
bench lat {{
    param seed "1"
    param noise "{}"
    build "sh build.sh"
    test "sh test.sh"
    run "python3 bench.py {{{{ seed }}}} {{{{ noise }}}}"
    collect "regex" pattern="lat=(?P<lat>[0-9.]+)" metric="lat" direction="lower"
    repeat 8
}}
"#,
            repo.display(),
            root.join("noise").display()
        ),
    )
    .unwrap();
    Repo {
        _tmp: tmp,
        root,
        repo,
        file,
    }
}

fn sha(r: &Repo, k: usize) -> String {
    git(&r.repo, &["rev-parse", &format!("HEAD~{}", 11 - k)])
}

#[test]
fn an_interrupted_bisection_resumes_and_names_the_slow_commit_skipping_the_broken_ones() {
    let r = repo("");
    let head = git(&r.repo, &["rev-parse", "HEAD"]);
    let dir = r.root.join("bisect");
    let db = r.root.join("h.sqlite");
    let t0 = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args([
            "bisect", "--metric", "lat", "--good", "HEAD~11", "--bad", "HEAD",
        ])
        .arg(&r.file)
        .arg("--output")
        .arg(&dir)
        .arg("--history")
        .arg(&db)
        .current_dir(&r.root)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    // interrupted once two commits have verdicts
    let journal = dir.join("bisect.jsonl");
    while std::fs::read_to_string(&journal)
        .map(|t| t.matches("\"event\":\"verdict\"").count() < 2)
        .unwrap_or(true)
    {
        assert!(t0.elapsed() < Duration::from_secs(120), "no verdicts");
        std::thread::sleep(Duration::from_millis(50));
    }
    // meanwhile a second bisection in the directory is refused, naming the holder
    let second = Test::new()
        .dir(&r.root)
        .args(["bisect", "--resume"])
        .arg_path(&dir)
        .run()
        .status(2);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(
        second.stderr.contains(&format!(
            "is in use by another expr (pid {} on host {}",
            child.id(),
            host.trim()
        )),
        "{}",
        second.stderr
    );
    let pg = format!("-{}", child.id());
    Command::new("kill")
        .args(["-INT", "--", &pg])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("expr bisect --resume"), "{err}");
    let before = std::fs::read_to_string(&journal).unwrap();
    // the user's checkout: HEAD and working tree as they were
    assert_eq!(git(&r.repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&r.repo, &["status", "--porcelain"]), "");

    let ran = Test::new()
        .dir(&r.root)
        .args(["bisect", "--resume"])
        .arg_path(&dir)
        .run()
        .status(0);
    eprintln!("{}", ran.stderr);
    println!("{}", ran.stdout);
    assert!(ran.stderr.contains("resuming"), "{}", ran.stderr);
    let after = std::fs::read_to_string(&journal).unwrap();
    assert!(after.starts_with(&before), "the journal is continued");
    let k = sha(&r, 7);
    assert!(
        ran.stdout.contains(&format!("first bad commit: {k}")),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("c7: change 7"), "{}", ran.stdout);
    // the broken commits: skipped, and said why
    let short = |k: usize| sha(&r, k)[..12].to_string();
    for (k, why) in [(5, "does not build"), (8, "fails its correctness test")] {
        let line = ran
            .stdout
            .lines()
            .find(|l| l.contains(&short(k)) && l.contains("| skip |"))
            .unwrap_or_else(|| panic!("{} not skipped:\n{}", short(k), ran.stdout));
        assert!(line.contains(why), "{line}");
    }
    assert!(ran.stdout.contains("spent: "), "{}", ran.stdout);
    let md = std::fs::read_to_string(dir.join("bisect.md")).unwrap();
    assert_eq!(md.trim(), ran.stdout.trim());
    // the same result as a page in report.html's look: self-contained, opened in a browser
    let page = dir.join("bisect.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(&format!("first bad commit: {k}")), "{html}");
    assert!(html.contains("<table class=\"sortable\">") && html.contains("c7: change 7"));
    common::browser::assert_self_contained(&html, &page);
    match common::browser::browser() {
        Some(bin) => {
            let work = tempfile::tempdir().unwrap();
            common::browser::open(&bin, work.path(), &page);
        }
        None => common::skip("no headless Chromium (apt-get install chromium-headless-shell)"),
    }
    // untouched; the worktrees stay as the build cache, inside the repository's .git
    assert_eq!(git(&r.repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&r.repo, &["status", "--porcelain"]), "");
    let cache = r.repo.join(".git/expr-bisect");
    let trees = git(&r.repo, &["worktree", "list", "--porcelain"]);
    let trees: Vec<&str> = trees
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .skip(1)
        .collect();
    assert!(!trees.is_empty());
    for t in &trees {
        assert!(Path::new(t).starts_with(&cache), "{t}");
    }
    assert!(ran.stderr.contains("(the build cache)"), "{}", ran.stderr);
    // every round is a result directory in the history, at its commit, and no part of the
    // experiment's own series (it measured old commits: a change point, a `last-ok` baseline)
    let hist = Test::new()
        .dir(&r.root)
        .args(["history", "slowdown", "--format", "json", "--history"])
        .arg_path(&db)
        .run()
        .status(2);
    assert!(
        hist.stderr
            .contains("holds no run of `slowdown` of its own, only the rounds of `expr bisect`"),
        "{}",
        hist.stderr
    );
    // (a round the interruption cut short may be unregistered: at most one per directory)
    let rounds = std::fs::read_dir(dir.join("runs")).unwrap().count();
    let noted: usize = hist
        .stderr
        .split_once("note: ")
        .and_then(|(_, n)| {
            n.split_once(
                " round(s) of `expr bisect` are in the history and left out of this series",
            )
        })
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", hist.stderr));
    assert!(noted > 0 && noted <= rounds, "{noted} of {rounds}");
    assert!(!hist.stdout.contains("/runs/"), "{}", hist.stdout);
    let db_text = std::fs::read(&db).unwrap();
    assert!(
        db_text.windows(k.len()).any(|w| w == k.as_bytes()),
        "the rounds are registered at their commits"
    );
    // resuming a finished bisection says its result again, runs nothing
    let again = Test::new()
        .dir(&r.root)
        .args(["bisect", "--resume"])
        .arg_path(&dir)
        .run()
        .status(0);
    assert!(again.stdout.contains(&format!("first bad commit: {k}")));
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), after);
    eprintln!("took {:?}", t0.elapsed());
}

/// `--max-runs` is a budget the bisection keeps: its last round is cut to what is left (with
/// rounds of 8, `--max-runs 10` spent 16: a whole round after 8).
#[test]
fn max_runs_is_never_exceeded() {
    let r = repo("");
    let out = Test::new()
        .dir(&r.root)
        .args([
            "bisect",
            "--metric",
            "lat",
            "--good",
            "HEAD~11",
            "--bad",
            "HEAD",
            "--max-runs",
            "10",
        ])
        .arg_path(&r.file)
        .args(["--output", "bo", "--history", "h.sqlite"])
        .run()
        .status(3);
    let md = std::fs::read_to_string(r.root.join("bo/bisect.md")).unwrap();
    assert!(
        md.contains(
            "spent: 0 probes (0 skipped), 2 rounds, 10 runs (10 of them on the references)"
        ),
        "{md}\n{}",
        out.stderr
    );
}

#[test]
fn dry_run_lists_the_range_and_plans_one_probe_and_writes_nothing() {
    let r = repo("");
    let dir = r.root.join("b");
    let ran = Test::new()
        .dir(&r.root)
        .args([
            "bisect",
            "--metric",
            "lat",
            "--good",
            "HEAD~11",
            "--bad",
            "HEAD",
            "--dry-run",
            "--output",
        ])
        .arg_path(&dir)
        .arg_path(&r.file)
        .run()
        .status(0);
    assert!(
        ran.stdout.contains("10 candidate commits"),
        "{}",
        ran.stdout
    );
    let mid = sha(&r, 5)[..12].to_string();
    assert!(
        ran.stdout.contains(&format!("then probes {mid}")),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("# expr plan: slowdown"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains(&format!(".git/expr-bisect/{}", sha(&r, 5))),
        "{}",
        ran.stdout
    );
    assert!(!dir.exists());
    assert_eq!(git(&r.repo, &["worktree", "list"]).lines().count(), 1);
}

#[test]
fn bad_input_is_a_located_error_never_a_panic() {
    let r = repo("host far ssh=\"far\" ip=\"10.0.0.9\" repo=\"/srv/r\"\n");
    let run = |args: &[&str]| {
        Test::new()
            .dir(&r.root)
            .args(["bisect"])
            .args(args)
            .arg_path(&r.file)
            .run()
    };
    // a revision that is not there
    let e = run(&[
        "--metric",
        "lat",
        "--good",
        "nope",
        "--bad",
        "HEAD",
        "--dry-run",
    ])
    .status(2);
    assert!(e.stderr.contains("`nope` is not a commit"), "{}", e.stderr);
    // good after bad
    let e = run(&[
        "--metric",
        "lat",
        "--good",
        "HEAD",
        "--bad",
        "HEAD~3",
        "--dry-run",
    ])
    .status(2);
    assert!(e.stderr.contains("not an ancestor"), "{}", e.stderr);
    // no history to take defaults from
    let e = run(&[
        "--metric",
        "lat",
        "--history",
        "/nonexistent/h.sqlite",
        "--dry-run",
    ])
    .status(2);
    assert!(e.stderr.contains("pass `--good"), "{}", e.stderr);
    // a step on an ssh host that cannot be reached: at its line
    let f = std::fs::read_to_string(&r.file)
        .unwrap()
        .replace("run \"python3", "run host=far \"python3");
    std::fs::write(&r.file, f).unwrap();
    let e = run(&[
        "--metric",
        "lat",
        "--good",
        "HEAD~2",
        "--bad",
        "HEAD",
        "--dry-run",
    ])
    .status(2);
    assert!(
        e.stderr.contains("exp.kdl:6:")
            && e.stderr.contains("host `far` (far, port ")
            && e.stderr.contains("is unreachable"),
        "{}",
        e.stderr
    );
}

/// The experiment of `r` moved onto a node of a one-node allocation (its repo on the shared
/// filesystem), each run step's command after `before`.
fn on_slurm(r: &Repo, before: &str) {
    let kdl = std::fs::read_to_string(&r.file)
        .unwrap()
        .replace(
            "host local repo=",
            "slurm cluster nodes=1 time=\"00:10:00\"\nhost n0 slurm=\"cluster\" node=0 repo=",
        )
        .replace("build \"", "build host=n0 \"")
        .replace("test \"", "test host=n0 \"")
        .replace("run \"", &format!("run host=n0 \"{before}"));
    std::fs::write(&r.file, kdl).unwrap();
}

#[test]
fn real_slurm_bisect_builds_and_measures_on_the_allocations_node() {
    let _one = common::slurm::lock();
    let Some(s) = common::slurm::Slurm::start() else {
        return;
    };
    let r = repo("");
    let head = git(&r.repo, &["rev-parse", "HEAD"]);
    // the experiment's host is a node of an allocation; its repo is on the (shared) filesystem
    on_slurm(&r, "");
    let dir = r.root.join("b");
    // c4 good, c7 bad: c5 does not build, c6 is good
    let ran = Test::new()
        .dir(&r.root)
        .env("SLURM_CONF", s.conf.to_str().unwrap())
        .args([
            "bisect", "--metric", "lat", "--good", "HEAD~7", "--bad", "HEAD~4", "--output",
        ])
        .arg_path(&dir)
        .args(["--history"])
        .arg_path(&r.root.join("h.sqlite"))
        .arg_path(&r.file)
        .run();
    eprintln!("{}", ran.stderr);
    assert_eq!(ran.status, 0, "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout
            .contains(&format!("first bad commit: {}", sha(&r, 7))),
        "{}",
        ran.stdout
    );
    let short5 = sha(&r, 5)[..12].to_string();
    assert!(
        ran.stdout
            .lines()
            .any(|l| l.contains(&short5) && l.contains("| skip |") && l.contains("does not build")),
        "{}",
        ran.stdout
    );
    // the steps went through srun on the allocation's node
    let rounds = std::fs::read_to_string(dir.join("bisect.jsonl")).unwrap();
    let first: serde_json::Value = rounds
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "round")
        .unwrap();
    let journal =
        std::fs::read_to_string(Path::new(first["dir"].as_str().unwrap()).join("journal.jsonl"))
            .unwrap();
    assert!(journal.contains("\"slurm_step\":"), "{journal}");
    // in one allocation the bisection held for all its rounds, given back at the end (each
    // step was a job of its own, with no name or comment `expr stop` knows)
    let job = ran
        .stderr
        .split("`cluster` is job ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .unwrap_or_else(|| panic!("{}", ran.stderr))
        .to_string();
    let steps: Vec<&str> = journal
        .split("\"slurm_step\":\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .collect();
    assert!(
        !steps.is_empty() && steps.iter().all(|s| s.starts_with(&format!("{job}."))),
        "{job}: {steps:?}"
    );
    assert!(
        ran.stderr.contains(&format!("expr: cancelled job {job}")),
        "{}",
        ran.stderr
    );
    assert!(
        s.drained(std::time::Duration::from_secs(10)),
        "{:?}",
        s.queue()
    );
    assert_eq!(git(&r.repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&r.repo, &["status", "--porcelain"]), "");
    // the build mark is the allocation's
    let marks: Vec<String> = std::fs::read_dir(r.repo.join(".git/expr-bisect"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".built-"))
        .collect();
    assert!(
        marks
            .iter()
            .any(|m| m.starts_with(&format!("{}.built-slurm-cluster-", sha(&r, 7)))),
        "{marks:?}"
    );
}

/// A bisection killed while it holds its allocation (kill -9: nothing of it gives the job
/// back): `expr stop` of its directory stops its rounds and cancels the job it held for them.
#[test]
fn real_slurm_expr_stop_of_a_killed_bisection_cancels_the_allocation_it_held() {
    killed_bisection(Ending::Stopped);
}

#[test]
fn real_slurm_a_resumed_bisection_cancels_the_allocation_a_killed_one_held() {
    killed_bisection(Ending::Killed);
}

#[test]
fn real_slurm_an_allocation_ended_under_a_round_blames_no_commit_and_resumes() {
    killed_bisection(Ending::Cancelled);
}

/// How a bisection on an allocation ends during its first round's run step.
#[derive(PartialEq, Clone, Copy)]
enum Ending {
    /// kill -9, then `expr stop` of its directory
    Stopped,
    /// kill -9, then `expr bisect --resume`
    Killed,
    /// its job cancelled under it, then `expr bisect --resume`
    Cancelled,
}

fn killed_bisection(how: Ending) {
    let _one = common::slurm::lock();
    let Some(s) = common::slurm::Slurm::start() else {
        return;
    };
    let r = repo("");
    on_slurm(&r, "sleep 30; ");
    let dir = r.root.join("b");
    let mut child = Command::new(env!("CARGO_BIN_EXE_expr"))
        .args([
            "bisect", "--metric", "lat", "--good", "HEAD~7", "--bad", "HEAD~4",
        ])
        .arg("--output")
        .arg(&dir)
        .arg("--history")
        .arg(r.root.join("h.sqlite"))
        .arg(&r.file)
        .env("SLURM_CONF", &s.conf)
        .env("EXPR_NO_SENTINEL", "1")
        .current_dir(&r.root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // its first round's run step is running in the job
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_dir(dir.join("runs"))
        .map(|d| {
            d.flatten().any(|e| {
                std::fs::read_to_string(e.path().join("journal.jsonl"))
                    .is_ok_and(|j| j.contains("\"step\":\"run1-"))
            })
        })
        .unwrap_or(false)
    {
        assert!(std::time::Instant::now() < end, "no round ran its step");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(s.queue().len(), 1, "{:?}", s.queue());
    let job = s.queue()[0].split('|').next().unwrap().to_string();
    if how == Ending::Cancelled {
        // the job ends under the round: no commit is blamed for it, and the bisection can go
        // on (helper 81: the round's commit was skipped, or the bisection "stopped" for good)
        s.cmd("scancel", &[&job]);
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(4), "{err}");
        assert!(
            err.contains(&format!(
                "bisect: the allocation ended under the round (Slurm job {job} is CANCELLED"
            )),
            "{err}"
        );
        let journal = std::fs::read_to_string(dir.join("bisect.jsonl")).unwrap();
        assert!(!journal.contains("\"event\":\"round\""), "{journal}");
    } else {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    // `expr ARGS… DIR` beside the cluster
    let expr = |args: &[&str]| {
        Test::new()
            .dir(&r.root)
            .env("SLURM_CONF", s.conf.to_str().unwrap())
            .args(args)
            .arg_path(&dir)
            .run()
    };
    if how != Ending::Stopped {
        // a resumed bisection gives the killed one's job back before it allocates its own
        std::fs::write(
            &r.file,
            std::fs::read_to_string(&r.file)
                .unwrap()
                .replace("sleep 30; ", ""),
        )
        .unwrap();
        let again = expr(&["bisect", "--resume"]);
        assert_eq!(again.status, 0, "{}", again.stderr);
        assert_eq!(
            again.stderr.contains(&format!(
                "bisect: cancelled Slurm job {job} (expr-slowdown), left by an earlier bisection"
            )),
            how == Ending::Killed,
            "{}",
            again.stderr
        );
        assert!(
            s.drained(std::time::Duration::from_secs(10)),
            "{:?}",
            s.queue()
        );
        // once finished, a resume says the result again without asking Slurm for anything
        let done = expr(&["bisect", "--resume"]);
        assert_eq!(done.status, 0, "{}", done.stderr);
        assert!(
            done.stderr.contains("bisect: finished before") && !done.stderr.contains("salloc"),
            "{}",
            done.stderr
        );
        return;
    }
    let stop = expr(&["stop"]);
    assert_eq!(stop.status, 0, "{}", stop.stderr);
    assert!(
        stop.stderr.contains("cancelled Slurm job ") && stop.stderr.contains("(expr-slowdown)"),
        "{}",
        stop.stderr
    );
    assert!(
        s.drained(std::time::Duration::from_secs(10)),
        "{:?}",
        s.queue()
    );
}
