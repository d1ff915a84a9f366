//! With this expr first on PATH, shell scripts that use POSIX `expr` keep working.

mod common;

use std::process::Command;

fn with_ours_first(script: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_expr"), dir.path().join("expr")).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = Command::new("bash")
        .args(["-c", script])
        .env("PATH", path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn posix_expr_arguments_go_to_the_system_expr() {
    if !std::path::Path::new("/usr/bin/expr").exists() {
        common::skip("no /usr/bin/expr here (coreutils)");
        return;
    }
    let (code, out, err) = with_ours_first(
        r#"command -v expr; expr 1 + 2; expr length abc; x=hello; expr "$x" : '\(h.*\)'; n=4; n=$(expr $n + 1); echo $n; expr 0; echo "status $?""#,
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].ends_with("/expr") && !lines[0].starts_with("/usr/bin"),
        "ours is first: {out}"
    );
    assert_eq!(
        &lines[1..],
        ["3", "3", "hello", "5", "0", "status 1"],
        "{out}\n{err}"
    );
    // our own subcommands and flags are still ours
    let (code, out, _) = with_ours_first("expr --version");
    assert_eq!(code, 0);
    assert!(out.contains("go to the system expr"), "{out}");
    let (code, _, err) = with_ours_first("expr chekc missing.kdl");
    assert_eq!(code, 2);
    assert!(err.contains("similar subcommand exists: 'check'"), "{err}");
}

#[test]
fn without_a_system_expr_the_error_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_expr"), dir.path().join("expr")).unwrap();
    let found = expr::util::coexist::find(&dir.path().join("expr"), dir.path().as_os_str());
    // only ours on PATH: /usr/bin/expr when the machine has one, never ours
    if let Some(p) = found {
        assert!(
            p.starts_with("/usr/bin") || p.starts_with("/bin"),
            "{}",
            p.display()
        );
    }
}

/// A second install of this expr (a copy) and a wrapper script around it, each first on PATH:
/// before, the two handed the arguments to each other for ever (720 execs in 3 s).
#[test]
fn two_installs_or_a_wrapper_never_exec_each_other_for_ever() {
    if !std::path::Path::new("/usr/bin/expr").exists() {
        common::skip("no /usr/bin/expr here (coreutils)");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (link, copy, wrap) = (t.path().join("l"), t.path().join("c"), t.path().join("w"));
    for d in [&link, &copy, &wrap] {
        std::fs::create_dir(d).unwrap();
    }
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_expr"), link.join("expr")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_expr"), copy.join("expr")).unwrap();
    std::fs::write(
        wrap.join("expr"),
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", env!("CARGO_BIN_EXE_expr")),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(wrap.join("expr"), std::fs::Permissions::from_mode(0o755)).unwrap();
    for path in [
        format!("{}:{}", copy.display(), link.display()),
        format!("{}:{}", link.display(), copy.display()),
        format!("{}:/usr/bin:/bin", wrap.display()),
    ] {
        let out = Command::new("/usr/bin/timeout")
            .args(["10", "expr", "1", "+", "2"])
            .env("PATH", &path)
            .env_remove(expr::util::coexist::FORWARDED)
            .output()
            .unwrap();
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).trim()
            ),
            (Some(0), "3"),
            "PATH={path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A subcommand's name as the first operand of an expression is still an expression: POSIX
/// `expr run : r` prints 1; `expr ls = ls` prints 1.
#[test]
fn a_subcommand_name_as_an_operand_stays_posix() {
    if !std::path::Path::new("/usr/bin/expr").exists() {
        common::skip("no /usr/bin/expr here (coreutils)");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let script = format!(
        "cd '{}'; expr run : r; expr ls = ls; expr check : c; expr init + 0; echo done; \
         expr ls == ls; f=exp.kdl; expr length \"$f\"; expr substr \"$f\" 1 3; expr index \"$f\" k; \
         expr match \"$f\" '.*'; expr + \"$f\"; expr -- \"$f\"; expr '(' \"$f\" ')'; \
         x=stop; expr \"$x\"; x=check; expr \"$x\"; expr ls = 2>/dev/null; echo \"ls= $?\"",
        t.path().display()
    );
    let (code, out, err) = with_ours_first(&script);
    assert_eq!(code, 0, "{err}");
    // `expr init + 0` is POSIX: `init` is not a number; a word of expr's own first is an
    // expression whatever file its operand names (`length exp.kdl` was taken for a mistyped
    // subcommand); a lone subcommand's name is the string; an operator with nothing after it is
    // POSIX's syntax error (`expr ls =` listed a directory named `=`)
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "1", "1", "1", "done", "1", "7", "exp", "5", "7", "exp.kdl", "exp.kdl", "exp.kdl",
            "stop", "check", "ls= 2"
        ],
        "{out}\n{err}"
    );
    assert!(err.contains("non-integer argument"), "{err}");
    assert_eq!(
        std::fs::read_dir(t.path()).unwrap().count(),
        0,
        "no file written"
    );
    // ours still: `check -` reads stdin
    let (code, _, err) = with_ours_first("echo 'bench \"b\" kind=\"bench\"' | expr check -");
    assert_ne!(code, 0, "an incomplete bench is refused");
    assert!(!err.contains("non-integer"), "{err}");
}

/// `x=init; expr "$x"` is POSIX expr's string: it prints `init` and writes nothing (it wrote
/// bench.kdl); `expr init bench` still writes the starter.
#[test]
fn a_lone_init_is_posix_exprs_string_and_writes_nothing() {
    if !std::path::Path::new("/usr/bin/expr").exists() {
        common::skip("no /usr/bin/expr here (coreutils)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (code, out, err) =
        with_ours_first(&format!("cd {} && x=init; expr \"$x\"", d.path().display()));
    assert_eq!((code, out.as_str()), (0, "init\n"), "{err}");
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "a file was written"
    );
    let (code, _, err) = with_ours_first(&format!("cd {} && expr init bench", d.path().display()));
    assert_eq!(code, 0, "{err}");
    assert!(d.path().join("bench.kdl").is_file());
}
