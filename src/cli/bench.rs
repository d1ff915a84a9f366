//! `expr bench CMD…`: hyperfine's most used form, as an experiment written for the user — each
//! command a lane of the generic `bench` kind — then run like any file.

use std::io::Write;
use std::path::PathBuf;

use super::args::BenchArgs as Args;
use crate::util::exit_codes;

/// A KDL 2.0 string holding `s` exactly.
fn kdl_string(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            // KDL's other newlines and the code points it does not allow in a document (the
            // direction controls, the byte-order mark) are escapes: as themselves they ended the
            // string or the document did not parse
            c if c.is_control()
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
                || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') =>
            {
                o.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A command as a step's template: literal, whatever braces it holds.
fn literal(cmd: &str) -> Result<String, String> {
    if !cmd.contains("{{") && !cmd.contains("{%") && !cmd.contains("{#") {
        return Ok(cmd.to_string());
    }
    // any spelling the template's lexer ends a raw block at: `{%endraw%}`, `{%- endraw`,
    // `{%+ endraw -%}` (only `{% endraw %}` and `{%- endraw` were caught: the rest ran as a
    // template, `echo A{%endraw%}{{ 6*7 }}{%raw%}B` as `echo A42B`)
    let ends_raw = cmd.match_indices("{%").any(|(i, _)| {
        let rest = cmd[i + 2..].trim_start_matches(['-', '+']);
        rest.trim_start().starts_with("endraw")
    });
    if ends_raw {
        return Err(format!(
            "`{cmd}` holds `{{% endraw %}}`: write an experiment file for it (`expr init bench`)"
        ));
    }
    Ok(format!("{{% raw %}}{cmd}{{% endraw %}}"))
}

/// Why `--export-json`/`--export-markdown` cannot be written where they name, before the run:
/// [`super::out::named_file_problem`], or one path for both.
fn exports_writable(a: &Args, output: &str) -> Result<(), String> {
    let out = std::path::Path::new(output);
    let given: Vec<(&str, &PathBuf)> = [
        ("--export-json", a.export_json.as_ref()),
        ("--export-markdown", a.export_markdown.as_ref()),
    ]
    .into_iter()
    .filter_map(|(f, p)| p.map(|p| (f, p)))
    .collect();
    for (flag, p) in &given {
        if let Some(why) = super::out::named_file_problem(
            flag,
            p,
            &[out],
            &crate::history::path(a.history.as_deref()),
        ) {
            return Err(why);
        }
    }
    if let [(_, x), (_, y)] = given[..] {
        if super::out::resolved(x) == super::out::resolved(y) {
            return Err(format!(
                "--export-json and --export-markdown both name {}",
                x.display()
            ));
        }
    }
    Ok(())
}

/// The lane names: the given ones, else each command itself (`cmd3` for one too long or holding
/// a comma, which `lanes=` separates); a repeated name gets ` (2)`.
fn lane_names(a: &Args) -> Result<Vec<String>, String> {
    if !a.names.is_empty() && a.names.len() != a.commands.len() {
        return Err(format!(
            "{} command names for {} commands: give one `-n` per command, or none",
            a.names.len(),
            a.commands.len()
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for (i, c) in a.commands.iter().enumerate() {
        // a name is shown on every line: no character that shows as nothing or drives the
        // terminal, and no space around it (`lanes=` trims what it lists)
        let unseen = |t: &str| {
            t.chars()
                .any(|ch| ch.is_control() || crate::util::markup::invisible(ch))
        };
        let base = match a.names.get(i) {
            Some(n) if n.contains(',') || n.trim().is_empty() || unseen(n) => {
                return Err(format!(
                    "command name `{}`: a name is not empty and holds no comma and no invisible or control character",
                    n.escape_debug()
                ))
            }
            Some(n) => n.trim().to_string(),
            None if c.contains(',')
                || c.chars().count() > 60
                || unseen(c)
                || c.trim().is_empty() =>
            {
                format!("cmd{}", i + 1)
            }
            None => c.trim().to_string(),
        };
        let mut name = base.clone();
        let mut k = 2;
        while out.contains(&name) {
            name = format!("{base} ({k})");
            k += 1;
        }
        out.push(name);
    }
    Ok(out)
}

/// The experiment `expr bench` runs.
fn experiment(a: &Args, names: &[String]) -> Result<String, String> {
    let mut o = String::from("// written by `expr bench`\nexperiment bench {\n");
    o.push_str(&format!(
        "    description {}\n}}\nbench bench {{\n",
        kdl_string(&format!("expr bench: {}", names.join(" vs ")))
    ));
    if let Some(p) = &a.prepare {
        o.push_str(&format!("    prepare {}\n", kdl_string(&literal(p)?)));
    }
    for (c, n) in a.commands.iter().zip(names) {
        if c.trim().is_empty() {
            return Err("an empty command: give each command as one argument".into());
        }
        o.push_str(&format!(
            "    run {} lanes={}{}\n",
            kdl_string(&literal(c)?),
            kdl_string(n),
            if a.ignore_failure {
                " exit-ok=\"any\""
            } else {
                ""
            }
        ));
    }
    for n in names {
        o.push_str(&format!("    lane {}\n", kdl_string(n)));
    }
    o.push_str(&format!(
        "    repeat {}\n    warmup {}\n    shell {}\n}}\n",
        a.runs,
        a.warmup,
        kdl_string(a.shell())
    ));
    Ok(o)
}

pub(super) fn bench(a: Args) -> i32 {
    let fail = |e: String| {
        let _ = writeln!(std::io::stderr(), "error: {e}");
        exit_codes::INVALID
    };
    let names = match lane_names(&a) {
        Ok(n) => n,
        Err(e) => return fail(e),
    };
    let text = match experiment(&a, &names) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    // a mistake in what the user typed is said against the written experiment, by a name that
    // is not a file (the temporary one is gone when the message is read)
    let loaded = crate::parse::load::load_str(WRITTEN, &text, &Default::default());
    if loaded.diags.iter().any(|d| d.is_error()) {
        let said: Vec<crate::model::diag::Diag> = loaded
            .diags
            .iter()
            .map(|d| in_bench_words(d, &a, &text))
            .collect();
        super::diags::print_diags(&said);
        return exit_codes::INVALID;
    }
    let output = a.output.clone().unwrap_or_else(|| {
        format!(
            "results/bench_{}",
            chrono::Local::now().format("%m%d%H%M%S_%3f")
        )
    });
    // `expr bench` has no --resume or --force: the run's advice for a directory that exists
    // would name them
    let taken = std::path::Path::new(&output);
    if taken.join("journal.jsonl").is_file() {
        let q = crate::util::shell::quote(&output);
        // a resume is advice only for a run of `expr bench`'s own
        let of = crate::report::gather::experiment_of(taken).map(|(e, _)| e.name);
        let advice = match of.as_deref() {
            Ok("bench") | Err(_) => {
                format!("`expr run --resume {q}` continues it (its points not finished run), or give `expr bench` another `--output`")
            }
            Ok(name) => format!(
                "it holds a run of `{}`: give `expr bench` another `--output`",
                crate::util::markup::one_line(name)
            ),
        };
        let _ = writeln!(
            std::io::stderr(),
            "error: {output} already exists; nothing in it is overwritten: {advice}"
        );
        return exit_codes::INVALID;
    }
    // the exports are checked before anything runs (a bad path was found after the run; an
    // export onto the result directory's journal lost the run)
    if let Err(e) = exports_writable(&a, &output) {
        return fail(e);
    }
    // the experiment is a file like any other (the journal keeps it; `--resume` runs it again)
    let dir = match tempfile_dir() {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let file = dir.join("bench.kdl");
    if let Err(e) = std::fs::write(&file, &text) {
        return fail(format!("{}: {e}", file.display()));
    }
    let opts = crate::exec::run::runner::Options {
        grace: 5,
        keep_experiment: Some("bench.kdl"),
        quiet: a.quiet,
        ..Default::default()
    };
    let code = super::run::run_cmd(
        &file,
        &[],
        &[],
        Some(&output),
        opts,
        &crate::parse::validate::Options::default(),
        a.history.as_deref(),
        None,
        &super::run::CiOut {
            junit: None,
            summary_md: None,
        },
    );
    let _ = std::fs::remove_dir_all(&dir);
    // the run has ended and torn down: a Ctrl-C from here ends expr at once
    crate::exec::signals::restore_default();
    let out = std::path::Path::new(&output);
    if !out.join("journal.jsonl").is_file() {
        return code;
    }
    summary_and_exports(&a, &names, out, code)
}

/// After the run: the exports written and the summary said, as hyperfine ends; the exit code
/// (`code`, the run's, unless an export could not be written).
fn summary_and_exports(a: &Args, names: &[String], out: &std::path::Path, code: i32) -> i32 {
    let data = match crate::report::gather::load(out) {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "warning: no summary: {e}");
            return code;
        }
    };
    let mut timed = crate::report::export::timed(&data);
    // each command by its text, as hyperfine names it (a lane's name is `cmd3` for one with a
    // comma or over 60 characters, and `x (2)` for the second of two alike); by its `-n`
    // name where one was given
    for t in timed.iter_mut() {
        if let Some(i) = names.iter().position(|n| *n == t.command) {
            t.command = a.names.get(i).unwrap_or(&a.commands[i]).clone();
        }
    }
    let mut code = code;
    let mut write = |flag: &str, path: &PathBuf, body: String| {
        // as a shell's `>`: through a link, into a FIFO or a device as it is
        if let Err(e) = crate::results::atomic::write_named(path, body.as_bytes()) {
            let _ = writeln!(std::io::stderr(), "error: {flag}: {e}");
            if code == exit_codes::OK {
                code = exit_codes::INTERNAL;
            }
        }
    };
    if let Some(p) = &a.export_json {
        let j = crate::report::export::json(&timed);
        write(
            "--export-json",
            p,
            serde_json::to_string_pretty(&j).unwrap_or_default() + "\n",
        );
    }
    if let Some(p) = &a.export_markdown {
        write(
            "--export-markdown",
            p,
            crate::report::export::markdown(&timed),
        );
    }
    if let Some(s) = crate::report::export::summary(&timed) {
        let _ = write!(std::io::stderr(), "\n{s}");
    }
    // as hyperfine warns: below a few ms, the shell's spawn time (measured and subtracted) is
    // as large as what is measured, and its own spread is in each time
    if a.shell() != "none" {
        let short: Vec<String> = timed
            .iter()
            .filter(|c| c.mean().is_some_and(|m| m < SHORT_S))
            .map(|c| format!("`{}`", crate::util::shell::comment(&c.command)))
            .collect();
        if !short.is_empty() {
            let _ = writeln!(
                std::io::stderr(),
                "\nwarning: {} took less than {} ms a run: the shell's spawn time, subtracted from each, is about as long, and its spread is in the results; `-N` runs the command without a shell",
                short.join(", "),
                SHORT_S * 1e3
            );
        }
    }
    code
}

/// Where bytes `off..off + len` of the written experiment `text` stand in command `i` (`c`),
/// as typed (escapes the KDL string needed undone; a place over its quotes is all of it): None
/// where the command's `run` string is not where it is written.
fn place_in_command(
    text: &str,
    i: usize,
    c: &str,
    off: usize,
    len: usize,
) -> Option<(usize, usize)> {
    // the command's `run` line: the (i+1)-th
    let line_start = text
        .match_indices("\n    run ")
        .nth(i)
        .map(|(at, m)| at + m.len())?;
    let body = literal(c).ok()?;
    let prefix = if body == c { "" } else { "{% raw %}" };
    if !text[line_start..].starts_with(&kdl_string(&body)) {
        return None;
    }
    // where the written string holds `c[..j]` whole: its length there (without the quote that
    // closes it)
    let written = |j: usize| line_start + kdl_string(&format!("{prefix}{}", &c[..j])).len() - 1;
    let bounds: Vec<usize> = c.char_indices().map(|(j, _)| j).chain([c.len()]).collect();
    // a place over the quotes (the whole string) is the whole command
    let from = bounds
        .iter()
        .copied()
        .take_while(|&j| written(j) <= off)
        .last()
        .unwrap_or(0);
    let to = bounds
        .iter()
        .copied()
        .find(|&j| written(j) >= off + len)
        .unwrap_or(c.len());
    Some((from, to - from))
}

/// Below this mean (s) a time through the shell is said to be inaccurate (hyperfine's 5 ms).
const SHORT_S: f64 = 0.005;

/// What diagnostics call the experiment `expr bench` writes.
const WRITTEN: &str = "the experiment `expr bench` wrote";

/// A diagnostic of the written experiment in `expr bench`'s own words: a command by its text,
/// not its step (`run1`), and `-N` where the file would say `shell "none"` (helper 78).
fn in_bench_words(d: &crate::model::diag::Diag, a: &Args, text: &str) -> crate::model::diag::Diag {
    const NO_SHELL: &str = "but the bench runs with `shell \"none\"`";
    let mut d = d.clone();
    if !d.message.contains(NO_SHELL) {
        return d;
    }
    for (i, c) in a.commands.iter().enumerate() {
        let step = format!("`run{}`", i + 1);
        if d.message.starts_with(&step) {
            d.message =
                d.message
                    .replacen(&step, &format!("`{}`", crate::util::markup::one_line(c)), 1);
            // the place is shown in the command as typed, not in the written experiment
            // (no excerpt rather than one of a file the user never wrote)
            let at = d.span.take().map(|s| (s.offset(), s.len()));
            d.source = None;
            if let Some((off, len)) = at.and_then(|(o, l)| place_in_command(text, i, c, o, l)) {
                let src =
                    crate::model::source::Source::new(format!("command {}", i + 1), c.clone());
                d = d.at(&src, (off, len).into());
            }
        }
    }
    let flag = if a.no_shell { "`-N`" } else { "`--shell none`" };
    d.message = d
        .message
        .replace(NO_SHELL, &format!("but {flag} runs it without one"));
    d.help = Some(format!(
        "drop {flag}: the command then runs through bash, whose spawn time is measured and subtracted; or put the pipe, redirection or variable in a script and time that"
    ));
    d
}

/// A private directory for the written experiment.
fn tempfile_dir() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    remove_stale(&base);
    for i in 0..100u32 {
        let d = base.join(format!("expr-bench-{}-{i}", std::process::id()));
        match std::fs::create_dir(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot make {}: {e}", d.display())),
        }
    }
    Err(format!("cannot make a directory in {}", base.display()))
}

/// The experiment folders of `expr bench` runs that were killed (`kill -9` leaves
/// `expr-bench-<pid>-<n>/bench.kdl` behind): removed when their process is gone and they hold
/// only that file. Nothing else in the temporary directory is touched.
fn remove_stale(base: &std::path::Path) {
    let Ok(rd) = std::fs::read_dir(base) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("expr-bench-"))
            .and_then(|n| n.split_once('-'))
            .filter(|(_, k)| k.parse::<u32>().is_ok())
            .and_then(|(p, _)| p.parse::<i32>().ok())
            .filter(|p| *p > 0)
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists
        let gone = unsafe { libc::kill(pid, 0) } == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        let only_ours = std::fs::read_dir(e.path()).is_ok_and(|d| {
            d.flatten()
                .all(|f| f.file_name() == "bench.kdl" && f.file_type().is_ok_and(|t| t.is_file()))
        });
        if gone && only_ours && e.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_file(e.path().join("bench.kdl"));
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A killed `expr bench`'s experiment folder goes once its process is gone; a live one's, a
    /// folder holding anything else, and any other name stay.
    #[test]
    fn a_killed_bench_leaves_no_folder_for_long() {
        let d = tempfile::tempdir().unwrap();
        let mk = |name: &str, files: &[&str]| {
            let p = d.path().join(name);
            std::fs::create_dir(&p).unwrap();
            for f in files {
                std::fs::write(p.join(f), "x").unwrap();
            }
            p
        };
        // a pid that is not running: past the kernel's pid range
        let dead = mk("expr-bench-2147483000-0", &["bench.kdl"]);
        let live = mk(
            &format!("expr-bench-{}-0", std::process::id()),
            &["bench.kdl"],
        );
        let other = mk("expr-bench-2147483000-1", &["bench.kdl", "mine.txt"]);
        let named = mk("expr-bench-notes", &["bench.kdl"]);
        remove_stale(d.path());
        assert!(!dead.exists());
        assert!(live.exists() && other.exists() && named.exists());
    }

    fn args(cmds: &[&str]) -> Args {
        Args {
            commands: cmds.iter().map(|s| s.to_string()).collect(),
            runs: 3,
            warmup: 1,
            shell: "bash".into(),
            no_shell: false,
            names: vec![],
            prepare: None,
            ignore_failure: false,
            export_json: None,
            export_markdown: None,
            output: None,
            history: None,
            quiet: false,
        }
    }

    #[test]
    fn the_written_experiment_checks_clean_and_keeps_every_command_as_typed() {
        let a = args(&[
            "sleep 0.1",
            "echo \"a\\b\" | awk '{print $1}'",
            "echo {{ not a template }}",
            "sleep 0.1",
        ]);
        let names = lane_names(&a).unwrap();
        assert_eq!(names[3], "sleep 0.1 (2)");
        let text = experiment(&a, &names).unwrap();
        let loaded = crate::parse::load::load_str("bench.kdl", &text, &Default::default());
        assert!(loaded.diags.is_empty(), "{text}\n{:?}", loaded.diags);
        let exp = loaded.experiment.unwrap();
        let plan = crate::plan::plan(
            &exp,
            "bench.kdl",
            &Default::default(),
            Some("o"),
            chrono::Local::now(),
        )
        .unwrap();
        // 4 lanes × 3 repeats; each point runs its own command, literally
        assert_eq!(plan.points.len(), 12);
        let lines: Vec<String> = plan
            .points
            .iter()
            .filter(|p| p.repeat == 0)
            .map(|p| {
                p.steps
                    .iter()
                    .find(|s| s.phase == crate::plan::Phase::Launch)
                    .unwrap()
                    .script_line()
            })
            .collect();
        assert_eq!(
            lines,
            [
                "sleep 0.1",
                "echo \"a\\b\" | awk '{print $1}'",
                "echo {{ not a template }}",
                "sleep 0.1"
            ]
        );
    }

    #[test]
    fn names_are_checked_and_commas_never_split_a_lane() {
        let mut a = args(&["a,b", "true"]);
        assert_eq!(lane_names(&a).unwrap(), ["cmd1", "true"]);
        a.names = vec!["x".into()];
        assert!(lane_names(&a)
            .unwrap_err()
            .contains("1 command names for 2 commands"));
        a.names = vec!["x,y".into(), "z".into()];
        assert!(lane_names(&a).is_err());
        assert!(literal("x {% endraw %}").is_err());
        // every spelling that ends a raw block
        for c in [
            "echo A{%endraw%}{{ 6*7 }}{%raw%}B",
            "x {% endraw -%}",
            "x {%+ endraw %}",
            "x {%-endraw%}",
        ] {
            assert!(literal(c).is_err(), "{c}");
        }
        assert!(literal("echo {%raw%} {{ x }}").is_ok());
        // space around a command or a name is not part of the lane's name; an invisible or
        // control character gives the command a plain name
        let a = args(&["true ", " sleep 0.01", "echo a\u{200b}b", "echo a\rb"]);
        assert_eq!(
            lane_names(&a).unwrap(),
            ["true", "sleep 0.01", "cmd3", "cmd4"]
        );
        let mut a = args(&["true"]);
        a.names = vec![" x ".into()];
        assert_eq!(lane_names(&a).unwrap(), ["x"]);
        a.names = vec!["x\u{202e}".into()];
        assert!(lane_names(&a).is_err());
    }

    /// An export that cannot be written is refused before the run: a folder, a missing
    /// folder, a file inside the result directory (`out/journal.jsonl` lost the run), one path
    /// for both.
    #[test]
    fn exports_are_checked_before_the_run() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out").display().to_string();
        std::fs::create_dir(d.path().join("out")).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(d.path(), d.path().join("lnk")).unwrap();
        let mut a = args(&["true"]);
        a.export_json = Some(d.path().join("x.json"));
        assert_eq!(exports_writable(&a, &out), Ok(()));
        a.export_markdown = Some(d.path().join("x.json"));
        assert!(exports_writable(&a, &out)
            .unwrap_err()
            .contains("both name"));
        a.export_markdown = None;
        for (p, why) in [
            (d.path().to_path_buf(), "is a directory"),
            (d.path().join("nodir/x.json"), "does not exist"),
            (
                d.path().join("out/journal.jsonl"),
                "inside the result directory",
            ),
            // the same file by another way: `..`, a linked folder
            (
                d.path().join("sub/../out/journal.jsonl"),
                "inside the result directory",
            ),
            (
                d.path().join("lnk/out/journal.jsonl"),
                "inside the result directory",
            ),
        ] {
            a.export_json = Some(p.clone());
            let e = exports_writable(&a, &out).expect_err(&p.display().to_string());
            assert!(e.contains(why), "{}: {e}", p.display());
        }
    }

    /// KDL's newlines and the code points it does not allow are escapes in the written
    /// experiment (as themselves they ended the string, or the file did not parse).
    #[test]
    fn a_command_with_any_character_is_a_kdl_string_that_reads_back() {
        for c in [
            "a\u{2028}b",
            "a\u{2029}b",
            "\u{feff}a",
            "a\u{202e}b",
            "a\u{2066}b",
            "a\u{85}b",
        ] {
            let k = kdl_string(c);
            assert!(!k.contains(['\u{2028}', '\u{feff}', '\u{202e}']), "{k:?}");
            let doc: kdl::KdlDocument = format!("n {k}")
                .parse()
                .unwrap_or_else(|e| panic!("{k:?}: {e:?}"));
            assert_eq!(doc.nodes()[0].entries()[0].value().as_string(), Some(c));
        }
    }
}
