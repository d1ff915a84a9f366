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

    /// A shell test that `$VAR` (a `wait` status) is ok. Bash reports a process killed by
    /// signal N as 128+N and `timeout` reports 124 and 137: `any` there is 1–123 and 125–128,
    /// which is every status it can tell from a signal or a timeout.
    pub fn sh_test(ok: Option<&ExitOk>, var: &str) -> String {
        match ok {
            None => format!("[ \"${var}\" = 0 ]"),
            Some(ExitOk::Any) => {
                format!("{{ [ \"${var}\" -le 128 ] && [ \"${var}\" != 124 ]; }}")
            }
            Some(ExitOk::Codes(c)) => {
                let alts: Vec<String> = std::iter::once(0)
                    .chain(c.iter().copied())
                    .map(|c| c.to_string())
                    .collect();
                format!(
                    "case \"${var}\" in {}) true ;; *) false ;; esac",
                    alts.join("|")
                )
            }
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

    /// The shell test, run by bash on the statuses `wait` gives.
    #[test]
    fn the_shell_test_takes_what_bash_can_tell_from_a_signal() {
        // (what exit-ok says, [(a `wait` status, whether it is ok)])
        type Case = (Option<ExitOk>, &'static [(i32, bool)]);
        let cases: &[Case] = &[
            (None, &[(0, true), (1, false)]),
            (
                Some(ExitOk::Codes(vec![1, 3])),
                &[(0, true), (1, true), (2, false), (3, true), (13, false)],
            ),
            (
                Some(ExitOk::Any),
                &[
                    (0, true),
                    (1, true),
                    (123, true),
                    (124, false),
                    (128, true),
                    (130, false),
                    (137, false),
                ],
            ),
        ];
        for (ok, statuses) in cases {
            for (st, want) in *statuses {
                let script = format!("rc={st}; {}", ExitOk::sh_test(ok.as_ref(), "rc"));
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
