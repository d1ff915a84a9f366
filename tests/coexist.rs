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
    let found = expr::coexist::find(&dir.path().join("expr"), dir.path().as_os_str());
    // only ours on PATH: /usr/bin/expr when the machine has one, never ours
    if let Some(p) = found {
        assert!(
            p.starts_with("/usr/bin") || p.starts_with("/bin"),
            "{}",
            p.display()
        );
    }
}
