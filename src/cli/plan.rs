//! `expr plan`, and the loading and planning `run` and `__task` share.

use std::io::Write;

use crate::parse::load;
use crate::parse::validate::Options;
use crate::util::exit_codes;

use super::args::PlanFormat;
use super::array::sbatch_text;
use super::diags::print_diags;

/// Load, validate and plan; the shared prefix of `plan` and `run`.
pub(super) fn build_plan(
    file: &std::path::Path,
    only: &[String],
    set: &[String],
    output: Option<&str>,
    opts: &Options,
) -> Result<(crate::model::Experiment, crate::plan::Plan), i32> {
    let loaded = load::load_file_with(file, opts, set);
    print_diags(&loaded.diags);
    if loaded.has_errors() {
        return Err(exit_codes::INVALID);
    }
    let Some(exp) = loaded.experiment else {
        return Err(exit_codes::INVALID);
    };
    let (exp, plan) = plan_of(exp, file, only, output, chrono::Local::now())?;
    // what only the values (`--set`, lanes, sweeps) make wrong
    print_diags(&super::check::servers_on_other_ports(&exp, &plan));
    print_diags(&super::check::secrets_rendered(&exp, &plan));
    // a templated port that renders to the ssh port or another server's: refused, as the
    // same number written in the file is
    let ports = super::check::templated_ports(&exp, &plan);
    print_diags(&ports);
    if ports.iter().any(crate::model::diag::Diag::is_error) {
        return Err(exit_codes::INVALID);
    }
    Ok((exp, plan))
}

/// The plan of a loaded experiment at a start time.
pub(super) fn plan_of(
    exp: crate::model::Experiment,
    file: &std::path::Path,
    only: &[String],
    output: Option<&str>,
    now: chrono::DateTime<chrono::Local>,
) -> Result<(crate::model::Experiment, crate::plan::Plan), i32> {
    plan_resuming(exp, file, only, output, now, Default::default())
}

/// [`plan_of`] for a resumed run: `done` holds the points its journal finished ok.
pub(super) fn plan_resuming(
    exp: crate::model::Experiment,
    file: &std::path::Path,
    only: &[String],
    output: Option<&str>,
    now: chrono::DateTime<chrono::Local>,
    done: std::sync::Arc<std::collections::HashSet<String>>,
) -> Result<(crate::model::Experiment, crate::plan::Plan), i32> {
    let filter = crate::parse::overrides::filter(&exp, only).map_err(|d| {
        print_diags(&d);
        exit_codes::INVALID
    })?;
    let source = file.display().to_string();
    let plan =
        crate::plan::plan_resuming(&exp, &source, &filter, output, now, done).map_err(|e| {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            exit_codes::INVALID
        })?;
    // a value no point has, even beside others that match (`--only n=1 --only n=7`), is a typo
    // that would leave out the points it meant
    let unmatched = if only.is_empty() {
        Vec::new()
    } else {
        unmatched_only(&exp, only)
    };
    if plan.points.is_empty() || !unmatched.is_empty() {
        let what = if plan.points.is_empty() {
            format!("no matrix point matches {}", only.join(" "))
        } else {
            let named: Vec<String> = unmatched.iter().map(|(o, _)| format!("`{o}`")).collect();
            format!(
                "{} {} no matrix point: the other values would run without it",
                named.join(", "),
                if named.len() == 1 { "matches" } else { "match" }
            )
        };
        // an argument that holds a secret's value is shown masked
        let mask = crate::util::secret::mask_known;
        let _ = writeln!(std::io::stderr(), "error: {}", mask(&what));
        for (_, hint) in &unmatched {
            let _ = writeln!(std::io::stderr(), "  {}", mask(hint));
        }
        return Err(exit_codes::INVALID);
    }
    Ok((exp, plan))
}

/// Each `--only KEY=VALUE` whose value no point of the whole matrix has for that key, with a
/// line saying what the key takes (the nearest value first).
fn unmatched_only(exp: &crate::model::Experiment, only: &[String]) -> Vec<(String, String)> {
    let all = crate::model::expand::expand(exp, &Default::default());
    let mut out = Vec::new();
    for o in only {
        let Some((k, v)) = o.split_once('=') else {
            continue;
        };
        let mut values: Vec<String> = Vec::new();
        for p in &all {
            let val = match k {
                "lane" => Some(p.lane_name.clone()),
                "repeat" => Some(p.repeat.to_string()),
                "bench" => exp.benches.get(p.bench).map(|b| b.name.clone()),
                _ => p.get(k).map(|x| x.to_string()),
            };
            if let Some(val) = val {
                if !values.contains(&val) {
                    values.push(val);
                }
            }
        }
        if values.iter().any(|x| x == v) {
            continue;
        }
        let hint = crate::util::suggest::did_you_mean(v, values.iter().map(String::as_str))
            .map(|s| format!(" — did you mean `{k}={s}`?"))
            .unwrap_or_default();
        let listed: Vec<String> = values.iter().take(12).map(|x| format!("`{x}`")).collect();
        let takes = format!(
            "`{k}` takes {}{}{hint}",
            if listed.is_empty() {
                "no value in this matrix".to_string()
            } else {
                listed.join(", ")
            },
            if values.len() > 12 { ", …" } else { "" }
        );
        out.push((o.clone(), takes));
    }
    out
}

pub(super) fn plan(
    file: &std::path::Path,
    format: PlanFormat,
    only: &[String],
    set: &[String],
    output: Option<&str>,
    opts: &Options,
) -> i32 {
    let (mut exp, plan) = match build_plan(file, only, set, output, opts) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // text and JSON are written as they are made (a plan of 100k points held twice, as the
    // plan and as its text, was most of `plan`'s memory)
    let text = match format {
        PlanFormat::Sbatch => match sbatch_text(&mut exp, &plan, file, set, only) {
            Ok(t) => t,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                return exit_codes::INVALID;
            }
        },
        PlanFormat::Text => {
            // for a reader: a control character in a command is shown, not obeyed (a `\r`
            // hid the start of the line it stood in on a terminal)
            let mut shown = Visible(&mut out, 0);
            let _ = crate::plan::render::text_to(&plan, &mut shown);
            // what is shown is then not what runs, to the letter: said
            if shown.1 > 0 {
                let _ = writeln!(
                    std::io::stderr(),
                    "note: the plan shows {} control character(s) in it as escapes (`\\r`, `\\e`, `\\xNN`; `\\u{{202e}}` for a direction or zero-width mark); commands.sh (`--format sh`) and the run have them as they are",
                    shown.1
                );
            }
            String::new()
        }
        PlanFormat::Json => {
            let _ = serde_json::to_writer_pretty(&mut out, &plan);
            "\n".to_string()
        }
        PlanFormat::Sh => {
            if let Err(e) = sh_can_run(&mut exp, &plan) {
                let _ = writeln!(std::io::stderr(), "error: {e}");
                return exit_codes::INVALID;
            }
            crate::plan::render::sh(&plan)
        }
    };
    let written = out.write_all(text.as_bytes()).and_then(|_| out.flush());
    // The process ends right after: freeing a large plan piece by piece only costs time.
    std::mem::forget(plan);
    // (text and JSON were written as they were made: an error then shows again here, the
    // writer's buffer still holding what did not go)
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            let _ = writeln!(std::io::stderr(), "error: writing the output: {e}");
            exit_codes::INTERNAL
        }
        _ => exit_codes::OK,
    }
}

/// Whether commands.sh can run the plan as `expr run` would: not an array run (its points are
/// `sbatch --array` tasks), and not one `expr run` refuses (steps off the array's nodes).
fn sh_can_run(exp: &mut crate::model::Experiment, plan: &crate::plan::Plan) -> Result<(), String> {
    let Some(al) = crate::exec::allocator::for_experiment(exp, &plan.output) else {
        return Ok(());
    };
    match al.array(exp, plan)? {
        Some(a) => Err(format!(
            "`{}` is an array (mode=\"array\"): its points run as the tasks of `sbatch --array`, which commands.sh does not do; `expr plan --format sbatch FILE` prints what `expr run` submits",
            a.alloc.name
        )),
        None => Ok(()),
    }
}

/// A writer that shows the control characters of what it writes (but newline and tab) as
/// escapes — `\r`, `\e`, `\x01`, `\x7f` — where a terminal would obey them; it counts them.
struct Visible<'a>(&'a mut dyn Write, usize);

impl Write for Visible<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut from = 0;
        let mut i = 0;
        while i < buf.len() {
            let b = buf[i];
            // a C1 control (U+0080–U+009F, UTF-8 `C2 80`–`C2 9F`): `\u{9b}` is a CSI to a
            // terminal, as `\e[` is
            let c1 = b == 0xc2 && buf.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n));
            // a character that shows as nothing or turns the text around (U+202E made a
            // command read backwards; helper 77): escaped as a name or a header's are
            let wide = match b {
                0xe0..=0xef => 3,
                0xf0..=0xf7 => 4,
                _ => 0,
            };
            let hidden = (wide > 0)
                .then(|| buf.get(i..i + wide))
                .flatten()
                .and_then(|s| std::str::from_utf8(s).ok())
                .and_then(|s| s.chars().next())
                .filter(|c| crate::util::markup::invisible(*c));
            let esc = match b {
                _ if c1 => format!("\\u{{{:x}}}", buf[i + 1]),
                _ if hidden.is_some() => format!("\\u{{{:x}}}", hidden.map_or(0, u32::from)),
                b'\n' | b'\t' => {
                    i += 1;
                    continue;
                }
                b'\r' => "\\r".to_string(),
                0x1b => "\\e".to_string(),
                b if b < 0x20 || b == 0x7f => format!("\\x{b:02x}"),
                _ => {
                    i += 1;
                    continue;
                }
            };
            self.0.write_all(&buf[from..i])?;
            self.0.write_all(esc.as_bytes())?;
            self.1 += 1;
            i += if c1 {
                2
            } else if hidden.is_some() {
                wide
            } else {
                1
            };
            from = i;
        }
        self.0.write_all(&buf[from..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    /// Controls are shown as escapes, the rest passes as written (UTF-8 untouched).
    #[test]
    fn the_plans_text_shows_control_characters() {
        let mut out = Vec::new();
        let mut v = super::Visible(&mut out, 0);
        v.write_all("a\rb\u{1b}[31mc\u{1}\u{7f}\tdé\u{9b}2J\u{85}\u{a0}\n".as_bytes())
            .unwrap();
        assert_eq!(v.1, 6, "each one shown is counted");
        // C1 controls too (a CSI, U+009B, and NEL, U+0085); U+00A0 is text
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a\\rb\\e[31mc\\x01\\x7f\tdé\\u{9b}2J\\u{85}\u{a0}\n"
        );
    }

    /// A direction mark or a zero-width character in a command is shown by its number, as in
    /// a name (helper 77: U+202E was written as is and turned the line around); `é`, `→` and
    /// CJK are text.
    #[test]
    fn the_plans_text_shows_invisible_characters() {
        let mut out = Vec::new();
        let mut v = super::Visible(&mut out, 0);
        v.write_all("printf %s 'a\u{202e}b\u{200b}c' → 中\n".as_bytes())
            .unwrap();
        assert_eq!(v.1, 2);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "printf %s 'a\\u{202e}b\\u{200b}c' → 中\n"
        );
    }
}
