//! The text that runs on a remote host, as `plan` prints it and the run sends it: the wrapper
//! that starts a step in a session of its own (and, for a plain ssh step, first reads its
//! secrets from stdin), and the script that removes a server's scratch there.

use crate::kind_api::step::is_scratch;
use crate::util::shell;

/// `/dev/shm/<first component>` of a scratch path: what this run made and must own.
pub fn top(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/dev/shm/")?;
    let first = rest.split('/').next()?;
    Some(format!("/dev/shm/{first}"))
}

/// The same on a remote host, as one POSIX sh script: each path is removed only when
/// `readlink -f` gives it back unchanged and its top entry is the user's. A path it refuses is
/// printed as `EXPR_REFUSED <path>`.
pub fn remote_script(paths: &[&str]) -> String {
    let mut s = String::new();
    for p in paths.iter().filter(|p| is_scratch(p)) {
        let Some(t) = top(p) else { continue };
        s.push_str(&format!(
            "p={}; t={}; if [ -e \"$p\" ] || [ -L \"$p\" ]; then if [ \"$(readlink -f -- \"$p\")\" = \"$p\" ] && [ \"$(stat -c %u -- \"$t\")\" = \"$(id -u)\" ]; then rm -rf -- \"$p\"; else echo \"EXPR_REFUSED $p\"; fi; fi; [ \"$t\" = \"$p\" ] || rmdir -- \"$t\" 2>/dev/null; ",
            shell::quote(p),
            shell::quote(&t)
        ));
    }
    s.push_str("exit 0");
    s
}

/// The remote wrapper: a new session whose leader prints its process group, and a watcher that
/// stops that group when the ssh connection's stdin closes.
pub fn remote_wrapper(cwd: &str, line: &str) -> String {
    // the leader's start time (field 22 of /proc/PID/stat) identifies the group later
    let job = format!(
        "echo EXPR_PGID=$$ EXPR_START=$(sed 's/.*) //' /proc/$$/stat | cut -d' ' -f20); {}",
        shell::cd_then(cwd, line)
    );
    format!(
        "exec 3<&0; setsid bash -c {} </dev/null & p=$!; (cat <&3 >/dev/null; kill -TERM -- -$p 2>/dev/null) & wait $p",
        shell::quote(&job)
    )
}

/// The remote wrapper of a step started by a plain ssh command (a host without an agent): it
/// first reads from its stdin how many lines follow, then those lines — the step's secrets as
/// `export K='v' …` (a value may hold newlines) — and evaluates them, so that no command line
/// holds them (ssh passes no environment); the rest of stdin is the connection the watcher
/// waits on.
pub fn remote_wrapper_with_env(cwd: &str, line: &str) -> String {
    reading_secrets(&remote_wrapper(cwd, line))
}

/// `remote` after the part that reads the step's secrets from stdin and exports them.
pub fn reading_secrets(remote: &str) -> String {
    format!("{READ_ENV}{remote}")
}

/// commands.sh's `secrets NAME…`: writes what [`reading_secrets`] reads, as `expr run` sends it
/// ([`env_line`]), from the script's environment — each value quoted for the remote shell, none
/// on a command line.
pub const SECRETS_FN: &str = r#"secrets() { # NAME…: a remote step's secrets for its stdin, as `expr run` sends them
  local t=export n v q nl
  for n in "$@"; do
    v=${!n}
    q=${v//\'/\'\\\'\'}
    t="$t $n='$q'"
  done
  nl=${t//[!$'\n']/}
  printf '%s\n%s\n' "$(( ${#nl} + 1 ))" "$t"
}
export -f secrets
"#;

/// The wrapper's first part: read the count, then that many lines, and evaluate them.
const READ_ENV: &str = "IFS= read -r expr_n; expr_env=; expr_i=0; while [ \"$expr_i\" -lt \"${expr_n:-0}\" ] && IFS= read -r expr_l; do expr_env=\"$expr_env$expr_l\n\"; expr_i=$((expr_i+1)); done; eval \"$expr_env\"; ";

/// What a plain ssh step's wrapper reads first (`remote_wrapper_with_env`): the number of
/// lines, then its secrets exported, each value quoted; `0` alone when it has none.
pub fn env_line(env: &[(String, String)]) -> String {
    let parts: Vec<String> = env
        .iter()
        .filter(|(k, _)| !k.is_empty() && k.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()))
        .map(|(k, v)| format!("{k}={}", shell::quote(v)))
        .collect();
    if parts.is_empty() {
        return "0\n".into();
    }
    let text = format!("export {}", parts.join(" "));
    format!("{}\n{text}\n", text.split('\n').count())
}

#[cfg(test)]
mod env_line_tests {
    use super::*;

    #[test]
    fn the_secrets_line_counts_the_lines_a_value_of_several_lines_takes() {
        assert_eq!(env_line(&[]), "0\n");
        let one = [("API_TOKEN".to_string(), "a b".to_string())];
        assert_eq!(env_line(&one), "1\nexport API_TOKEN='a b'\n");
        let two = [("K".to_string(), "x\ny".to_string())];
        assert_eq!(env_line(&two), "2\nexport K='x\ny'\n");
    }

    #[test]
    fn the_wrapper_exports_what_it_reads_first() {
        // run by sh, as a login shell would: values with newlines, quotes and `$` come through
        let env = [
            ("K".to_string(), "x\n'y' $z".to_string()),
            ("L".to_string(), String::new()),
        ];
        let script = format!("{READ_ENV}printf '%s|%s|' \"$K\" \"${{L-unset}}\"; cat");
        let mut c = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut i = c.stdin.take().unwrap();
            i.write_all(env_line(&env).as_bytes()).unwrap();
            i.write_all(b"rest").unwrap();
        }
        let out = c.wait_with_output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "x\n'y' $z||rest");
        assert!(remote_wrapper_with_env(".", "true").starts_with(READ_ENV));
    }
}
