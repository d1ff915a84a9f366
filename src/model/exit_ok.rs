//! `exit-ok`: the exit codes of a `run` step besides 0 that leave it ok (hyperfine's
//! `--ignore-failure`): its time counts and its point goes on.

use serde::{Deserialize, Serialize};

/// Which non-zero exits a run step may end with and still be ok. A signal or a timeout is
/// never ok.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExitOk {
    /// Every exit code (1–255).
    Any,
    /// These codes (each 1–255), ascending.
    Codes(Vec<i32>),
}

impl ExitOk {
    /// `any`, or exit codes separated by commas (`"1"`, `"1,2"`; a 0 among them says nothing
    /// more: 0 is always ok).
    pub fn parse(text: &str) -> Result<ExitOk, String> {
        let t = text.trim();
        if t == "any" {
            return Ok(ExitOk::Any);
        }
        let mut codes = Vec::new();
        for part in t.split(',') {
            let p = part.trim();
            match p.parse::<i32>() {
                Ok(c) if (0..=255).contains(&c) && p.chars().all(|c| c.is_ascii_digit()) => {
                    if c != 0 {
                        codes.push(c)
                    }
                }
                _ if p.is_empty() => return Err("an empty code".into()),
                _ => return Err(format!("`{p}` is not an exit code 0–255")),
            }
        }
        codes.sort_unstable();
        codes.dedup();
        Ok(ExitOk::Codes(codes))
    }

    /// Whether a step that ended with `code` (the reaper's: `-N` for signal N) is ok. 0 always
    /// is.
    pub fn accepts(&self, code: i32) -> bool {
        match self {
            _ if code == 0 => true,
            ExitOk::Any => (1..=255).contains(&code),
            ExitOk::Codes(c) => c.contains(&code),
        }
    }

    /// As written in the experiment: `any` or `1,2`.
    pub fn text(&self) -> String {
        match self {
            ExitOk::Any => "any".into(),
            ExitOk::Codes(c) if c.is_empty() => "0".into(),
            ExitOk::Codes(c) => c
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// Whether commands.sh can tell a `wait` status `code` from a failure `expr run` sees
    /// otherwise: bash reports a process killed by signal N as 128+N and `timeout` a timeout as
    /// 124; a step run without a shell (`direct`) that could not start is bash's 126 or 127
    /// there.
    pub fn sh_tells(code: i32, direct: bool) -> bool {
        (1..=128).contains(&code) && code != 124 && !(direct && (code == 126 || code == 127))
    }

    /// A shell test that `$VAR` (a `wait` status) is ok: 0 and the accepted codes that
    /// [`ExitOk::sh_tells`] (a status it cannot tell from a timeout or a signal counts as
    /// failed, never the other way).
    pub fn sh_test(ok: Option<&ExitOk>, var: &str, direct: bool) -> String {
        let codes: Vec<i32> = match ok {
            None => Vec::new(),
            Some(ExitOk::Any) => (1..=255).collect(),
            Some(ExitOk::Codes(c)) => c.clone(),
        };
        // runs of codes as ranges: `any` is 0–123 and 125–128
        let mut runs: Vec<(i32, i32)> = Vec::new();
        let told = codes.into_iter().filter(|c| Self::sh_tells(*c, direct));
        for c in std::iter::once(0).chain(told) {
            match runs.last_mut() {
                Some((_, hi)) if *hi + 1 == c => *hi = c,
                _ => runs.push((c, c)),
            }
        }
        let tests: Vec<String> = runs
            .iter()
            .map(|(lo, hi)| {
                if lo == hi {
                    format!("[ \"${var}\" = {lo} ]")
                } else {
                    format!("{{ [ \"${var}\" -ge {lo} ] && [ \"${var}\" -le {hi} ]; }}")
                }
            })
            .collect();
        match &tests[..] {
            [one] => one.clone(),
            _ => format!("{{ {}; }}", tests.join(" || ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ExitOk;

    #[test]
    fn exit_ok_reads_any_or_codes_and_refuses_the_rest() {
        assert_eq!(ExitOk::parse("any"), Ok(ExitOk::Any));
        assert_eq!(ExitOk::parse(" 2, 1,2 "), Ok(ExitOk::Codes(vec![1, 2])));
        assert_eq!(ExitOk::parse("1,2").unwrap().text(), "1,2");
        assert_eq!(ExitOk::parse("0,1"), Ok(ExitOk::Codes(vec![1])));
        // read back as written in the resolved experiment
        assert_eq!(ExitOk::parse("0").unwrap().text(), "0");
        for bad in ["", "256", "-1", "+1", "1,,2", "all", "1.0", "0x1"] {
            assert!(ExitOk::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_signal_or_a_timeout_is_never_ok() {
        let any = ExitOk::Any;
        assert!(any.accepts(0) && any.accepts(1) && any.accepts(255));
        assert!(!any.accepts(-9) && !any.accepts(-1));
        let one = ExitOk::Codes(vec![1]);
        assert!(one.accepts(0) && one.accepts(1) && !one.accepts(2) && !one.accepts(-15));
    }

    /// The shell test, run by bash on the statuses `wait` gives: what it cannot tell from a
    /// timeout (124), a signal (128+N) or, without a shell, a program that did not start (126,
    /// 127) is failed, whatever `exit-ok` lists (helper 83: `exit-ok="124,137"` passed a
    /// timeout and a SIGKILL in commands.sh that `expr run` failed).
    #[test]
    fn the_shell_test_takes_what_bash_can_tell_from_a_signal() {
        // (what exit-ok says, without a shell, [(a `wait` status, whether it is ok)])
        type Case = (Option<ExitOk>, bool, &'static [(i32, bool)]);
        let cases: &[Case] = &[
            (None, false, &[(0, true), (1, false)]),
            (
                Some(ExitOk::Codes(vec![1, 3])),
                false,
                &[(0, true), (1, true), (2, false), (3, true), (13, false)],
            ),
            (
                Some(ExitOk::Codes(vec![1, 2, 124, 137, 143, 200])),
                false,
                &[
                    (1, true),
                    (2, true),
                    (3, false),
                    (124, false),
                    (137, false),
                    (200, false),
                ],
            ),
            (
                Some(ExitOk::Codes(vec![124])),
                false,
                &[(0, true), (124, false)],
            ),
            (
                Some(ExitOk::Any),
                false,
                &[
                    (0, true),
                    (1, true),
                    (123, true),
                    (124, false),
                    (125, true),
                    (127, true),
                    (128, true),
                    (130, false),
                    (137, false),
                ],
            ),
            (
                Some(ExitOk::Any),
                true,
                &[
                    (1, true),
                    (125, true),
                    (126, false),
                    (127, false),
                    (128, true),
                ],
            ),
        ];
        for (ok, direct, statuses) in cases {
            for (st, want) in *statuses {
                let script = format!("rc={st}; {}", ExitOk::sh_test(ok.as_ref(), "rc", *direct));
                let got = std::process::Command::new("bash")
                    .args(["-c", &script])
                    .status()
                    .unwrap()
                    .success();
                assert_eq!(got, *want, "{ok:?} {st}: {script}");
            }
        }
    }
}
