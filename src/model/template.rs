//! minijinja templates: strict undefined, shell-quoted interpolation, errors located in the KDL.

use std::collections::BTreeSet;

use minijinja::{Environment, Value};

use crate::model::diag::{Code, Diag};
use crate::model::Loc;

pub use crate::util::template::{env, Quote};

/// Instructions an experiment template may run (check's trial render and plan's renders): far
/// more than any `{{ value | filter }}` needs, and a bound on loops.
const FUEL: u64 = 50_000;
/// The longest text an experiment template may render to.
const MAX_RENDERED: usize = 1 << 20;

/// The longest command (or one argument of a command run without a shell) a rendered template
/// may make: Linux takes at most 128 KiB in one argument (`MAX_ARG_STRLEN`: `bash -c COMMAND`
/// is one), and the remote and Slurm wrappers add to it.
pub const MAX_COMMAND: usize = 100 * 1024;

/// An environment for experiment templates: like `env`, with a fuel limit.
fn limited(quote: Quote) -> Environment<'static> {
    let mut e = env(quote);
    e.set_fuel(Some(FUEL));
    e
}

/// Experiment templates may use `{% if %}` but no loops, assignments, macros or includes:
/// a command line needs none of them, and each is a way to run away with time or memory.
fn statement_problem(template: &str) -> Option<(std::ops::Range<usize>, String)> {
    let mut rest = 0;
    while let Some(i) = template[rest..].find("{%") {
        let at = rest + i;
        let body = template[at + 2..]
            .trim_start_matches(['-', '+'])
            .trim_start();
        let word: String = body
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !matches!(
            word.as_str(),
            "if" | "elif" | "else" | "endif" | "raw" | "endraw"
        ) {
            let end = template[at..]
                .find("%}")
                .map(|e| at + e + 2)
                .unwrap_or(template.len());
            return Some((at..end, word));
        }
        rest = at + 2;
    }
    None
}

/// What [`statement_problem`] found, said: the statement, or a block that names none.
fn statement_message(word: &str) -> String {
    if word.is_empty() {
        "a `{% %}` block names no statement: templates take `if`, `elif`, `else`, `endif`, `raw` and `endraw`".into()
    } else {
        format!("`{{% {word} %}}` is not allowed in an experiment template")
    }
}

/// The span of the template text inside its KDL string, when it can be mapped exactly.
fn inner_offset(loc: &Loc, template: &str) -> Option<usize> {
    let start = loc.span.offset();
    let text = loc.src.slice(start, loc.span.len());
    let prefix = if text.starts_with("\"\"\"") {
        return None;
    } else if text.starts_with('"') {
        1
    } else if text.starts_with('#') {
        text.find('"')? + 1
    } else {
        0
    };
    (loc.src.slice(start + prefix, template.len()) == template).then_some(start + prefix)
}

/// A diagnostic at `range` (bytes of `template`) inside its KDL string where that maps exactly
/// (not in a `"""` string, nor where escapes make the text differ), else at the whole value.
pub fn located(
    code: Code,
    msg: String,
    loc: &Loc,
    template: &str,
    range: Option<std::ops::Range<usize>>,
) -> Diag {
    let d = Diag::error(code, msg);
    match (inner_offset(loc, template), range) {
        (Some(base), Some(r)) => d.at(&loc.src, (base + r.start, r.len().max(1)).into()),
        _ => d.at(&loc.src, loc.span),
    }
}

/// Where `word` stands as a whole word inside a `{{ … }}` or `{% … %}` block of a template (the
/// `ell` of `{{ ell }}`, not the one in "hello"), else as a whole word anywhere.
fn word_in_blocks(template: &str, word: &str) -> Option<std::ops::Range<usize>> {
    let is_id = |c: char| c.is_alphanumeric() || c == '_';
    let whole = |hay: &str, base: usize| -> Option<std::ops::Range<usize>> {
        let mut from = 0;
        while let Some(i) = hay[from..].find(word) {
            let at = from + i;
            let before = hay[..at].chars().next_back();
            let after = hay[at + word.len()..].chars().next();
            if !before.is_some_and(is_id) && !after.is_some_and(is_id) {
                return Some(base + at..base + at + word.len());
            }
            from = at + word.len().max(1);
        }
        None
    };
    let mut at = 0;
    while let Some(i) = template[at..].find(['{']) {
        let start = at + i;
        let close = match template[start..].get(..2) {
            Some("{{") => "}}",
            Some("{%") => "%}",
            _ => {
                at = start + 1;
                continue;
            }
        };
        let Some(len) = template[start + 2..].find(close) else {
            break;
        };
        if let Some(r) = whole(&template[start + 2..start + 2 + len], start + 2) {
            return Some(r);
        }
        at = start + 2 + len + 2;
    }
    whole(template, 0)
}

/// Check a template: syntax, and every variable it uses is in `known`.
/// Returns the top-level variables it uses.
#[allow(clippy::result_large_err)] // built once per failing template; boxing buys nothing
pub fn check(
    template: &str,
    loc: &Loc,
    known: &BTreeSet<String>,
    quote: Quote,
) -> Result<BTreeSet<String>, Diag> {
    if let Some((range, word)) = statement_problem(template) {
        return Err(located(
            Code::TemplateSyntax,
            statement_message(&word),
            loc,
            template,
            Some(range),
        )
        .label("statement")
        .help("templates take `{{ value }}`, filters and `{% if %}…{% endif %}`; declare a `sweep` or `param` instead of a loop or `set`"));
    }
    if let Some((range, n)) = crate::util::template::too_many_operators(template) {
        return Err(located(
            Code::InputLimit,
            format!(
                "a template block holds {n} operators (at most {})",
                crate::util::template::MAX_OPERATORS
            ),
            loc,
            template,
            Some(range),
        )
        .label("this block")
        .help("compute the value outside expr and pass it as a `param` or a `sweep` value"));
    }
    let env = limited(quote);
    let tmpl = match env.template_from_str(template) {
        Ok(t) => t,
        Err(e) => {
            // `${#x}` (a shell's length) opens a template comment
            let help = if template.contains("{#") {
                "`{#` opens a template comment (as in the shell's `${#x}`): put such text in a raw block, `{% raw %}${#x}{% endraw %}`"
            } else {
                "minijinja syntax: `{{ variable }}`, `{{ value | filter }}`; a literal `{{` is written `{{ '{{' }}`"
            };
            return Err(located(
                Code::TemplateSyntax,
                format!(
                    "template syntax error: {}",
                    e.detail().unwrap_or("invalid template")
                ),
                loc,
                template,
                e.range(),
            )
            .label("here")
            .help(help));
        }
    };
    let used: BTreeSet<String> = tmpl.undeclared_variables(false).into_iter().collect();
    // the filters are tried first, with a sample for every name used, defined or not: an
    // unknown filter is said with an undefined name, not only once that name is fixed
    let filters = filter_problem(&tmpl, template, loc, &used);
    if let Some(mut d) = undefined_diag(template, loc, known, &used) {
        if let Some((span, f)) = filters.as_ref().and_then(|f| f.span.map(|s| (s, f))) {
            // with its "did you mean", where it has one
            let near = f
                .help
                .as_deref()
                .and_then(|h| h.split_once('?'))
                .filter(|(a, _)| a.starts_with("did you mean"))
                .map(|(a, _)| format!(": {a}?"))
                .unwrap_or_default();
            d.related.push((span, format!("{}{near}", f.message)));
        }
        return Err(d);
    }
    match filters {
        Some(f) => Err(f),
        None => Ok(used),
    }
}

/// The filter, test or date-format error rendering `tmpl` on sample values gives, located.
fn filter_problem(
    tmpl: &minijinja::Template<'_, '_>,
    template: &str,
    loc: &Loc,
    used: &BTreeSet<String>,
) -> Option<Diag> {
    // Filters and tests are looked up when the template renders: try it on sample values so an
    // unknown filter or a bad date format is a check error, not a plan-time failure.
    let ctx: std::collections::BTreeMap<String, Value> = used
        .iter()
        .map(|v| {
            let sample = if v == "started" {
                Value::from("2026-01-02T03:04:05+00:00")
            } else {
                Value::from("0")
            };
            (v.clone(), sample)
        })
        .collect();
    if let Err(e) = crate::util::memcap::capped(&rendering(template), || tmpl.render(ctx)) {
        use minijinja::ErrorKind as K;
        let date = e.kind() == K::InvalidOperation && e.to_string().contains("date format");
        if matches!(
            e.kind(),
            K::UnknownFilter | K::UnknownTest | K::UnknownFunction
        ) || date
        {
            let detail = e
                .detail()
                .map(str::to_string)
                .unwrap_or_else(|| e.to_string());
            return Some(
                located(
                    Code::TemplateFilter,
                    format!("template error: {detail}"),
                    loc,
                    template,
                    e.range(),
                )
                .label("here")
                .help(filter_help(e.kind(), &detail)),
            );
        }
    }
    None
}

/// The help of a filter, test or date-format error: "did you mean" where the unknown name is
/// near a known one (`dat` → `date`).
fn filter_help(kind: minijinja::ErrorKind, detail: &str) -> String {
    let general = "expr's filter `date(format='%Y%m%d%H%M%S')` takes chrono's strftime codes; the other filters are minijinja's built-ins (`lower`, `replace`, `default`, …)";
    let (what, known) = match kind {
        minijinja::ErrorKind::UnknownFilter => ("filter", crate::util::template::FILTERS),
        minijinja::ErrorKind::UnknownTest => ("test", crate::util::template::TESTS),
        _ => return general.to_string(),
    };
    // minijinja says "filter dat is unknown"
    let name = detail
        .strip_prefix(what)
        .and_then(|rest| rest.trim().strip_suffix("is unknown"))
        .map(str::trim);
    match name.and_then(|n| crate::util::suggest::did_you_mean(n, known.iter().copied())) {
        Some(near) => format!("did you mean the {what} `{near}`? {general}"),
        None => general.to_string(),
    }
}

/// The names a template uses that are not defined, said at once at the first in the text, with
/// a fix for each that has one.
fn undefined_diag(
    template: &str,
    loc: &Loc,
    known: &BTreeSet<String>,
    used: &BTreeSet<String>,
) -> Option<Diag> {
    // every undefined name is said at once (one was, the alphabetically first), at the first
    // in the text
    let mut undefined: Vec<(usize, &String)> = used
        .iter()
        .filter(|v| !known.contains(*v))
        .map(|v| {
            let at = word_in_blocks(template, v).map_or(usize::MAX, |r| r.start);
            (at, v)
        })
        .collect();
    undefined.sort();
    let others: Vec<String> = undefined
        .iter()
        .skip(1)
        .map(|(_, v)| format!("`{v}`"))
        .collect();
    if let Some((_, v)) = undefined.first() {
        {
            let pos = word_in_blocks(template, v);
            let names: Vec<&str> = known.iter().map(String::as_str).collect();
            // `{{ size-mb }}` is `size` minus `mb`: a name written with `-` is its `_` form
            let dashed = names.iter().find(|k| {
                k.contains('_')
                    && k.split('_').any(|part| part == v.as_str())
                    && template.contains(&k.replace('_', "-"))
            });
            // several undefined: a fix for each that has one (`mdoe` → `mode`, `batch` and
            // `size` of `batch-size` → `batch_size`), not only the first's
            let defined = || {
                format!(
                    "defined here: {}",
                    crate::util::markup::ticked(names.iter())
                )
            };
            let mut unfixed = 0usize;
            let fixes: Vec<String> = if others.is_empty() {
                Vec::new()
            } else {
                let mut f: Vec<String> = Vec::new();
                for (_, u) in &undefined {
                    let fix = match names.iter().find(|k| {
                        k.contains('_')
                            && k.split('_').any(|part| part == u.as_str())
                            && template.contains(&k.replace('_', "-"))
                    }) {
                        Some(k) => Some(format!(
                            "`{}` is `{{{{ {k} }}}}` (in a template `-` is a minus sign)",
                            k.replace('_', "-")
                        )),
                        None => crate::util::suggest::did_you_mean(u, names.iter().copied())
                            .map(|s| format!("`{u}`: did you mean `{s}`?")),
                    };
                    match fix {
                        Some(x) if !f.contains(&x) => f.push(x),
                        Some(_) => {}
                        None => unfixed += 1,
                    }
                }
                // the ones without a fix: what is defined
                if unfixed > 0 && !f.is_empty() {
                    f.push(defined());
                }
                f
            };
            let help = match (dashed, crate::util::suggest::did_you_mean(v, names.iter().copied())) {
                _ if !fixes.is_empty() => fixes.join("; "),
                (Some(k), _) => format!(
                    "write `{{{{{k}}}}}`: in a template `-` is a minus sign, and names take `_` for `-`"
                ),
                (None, Some(s)) => format!("did you mean `{s}`?"),
                (None, None) => defined(),
            };
            let message = if others.is_empty() {
                format!("template uses the undefined variable `{v}`")
            } else {
                format!(
                    "template uses the undefined variables `{v}`, {}",
                    others.join(", ")
                )
            };
            return Some(
                located(Code::TemplateUndefined, message, loc, template, pos)
                    .label("undefined")
                    .help(help),
            );
        }
    }
    None
}

/// What a capped rendering says it was doing: the template, on one line, its first 120
/// characters.
fn rendering(template: &str) -> String {
    let mut t: String = template.chars().take(120).collect();
    if t.len() < template.len() {
        t.push('…');
    }
    format!(
        "rendering the template `{}`",
        crate::util::markup::one_line(&t)
    )
}

/// Render a template with a context.
pub fn render(template: &str, ctx: &Value, quote: Quote) -> Result<String, String> {
    if let Some((_, word)) = statement_problem(template) {
        return Err(statement_message(&word));
    }
    if let Some((_, n)) = crate::util::template::too_many_operators(template) {
        return Err(format!(
            "a template block holds {n} operators (at most {})",
            crate::util::template::MAX_OPERATORS
        ));
    }
    let env = limited(quote);
    let written = template;
    // a value inside the author's quotes is moved out of them, where its own quotes hold
    let template = match quote {
        Quote::Shell => crate::util::template::tags_out_of_quotes(template),
        _ => std::borrow::Cow::Borrowed(template),
    };
    // what went wrong, without minijinja's `(in <string>:1)`: the caller says where
    let out = crate::util::memcap::capped(&rendering(&template), || env.render_str(&template, ctx))
        .map_err(|e| {
            // the part of the template it failed at, where minijinja says no more than "missing
            // argument" (`replace('a')`)
            // (only text the author wrote: not what the quoting made of it, `shell_word(…)`)
            let at = e
                .range()
                .and_then(|r| template.get(r))
                .filter(|t| !t.is_empty() && t.len() <= 80 && written.contains(*t))
                .map(|t| format!(" (at `{t}`)"))
                .unwrap_or_default();
            match e.detail() {
                // expr's own refusals (a value that must be a plain word) say all themselves
                Some(d)
                    if e.kind() == minijinja::ErrorKind::InvalidOperation
                        && (d.starts_with("this command uses") || d.starts_with("a value ")) =>
                {
                    format!("{d}{at}")
                }
                Some(d) => format!("{}: {d}{at}", e.kind()),
                None => format!("{}{at}", e.kind()),
            }
        })?;
    if out.len() > MAX_RENDERED {
        return Err(format!(
            "the template renders to {} bytes (more than {MAX_RENDERED})",
            out.len()
        ));
    }
    if matches!(quote, Quote::Shell | Quote::Arg) && out.len() > MAX_COMMAND {
        return Err(format!(
            "the command renders to {} bytes, more than a command line takes (at most {MAX_COMMAND}: Linux refuses an argument over 128 KiB); write the long text to a file and pass its path",
            out.len()
        ));
    }
    // no command line, path or argument can carry a NUL: the run could not start it
    if out.contains('\0') {
        return Err("a value holds a NUL character (\\u{0}), which no command line, argument or path can carry".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each template refused in a shell line, its error holding one of `needles`.
    fn refused(ctx: &minijinja::Value, templates: &[&str], needles: &[&str]) {
        for t in templates {
            let e = render(t, ctx, Quote::Shell).unwrap_err();
            assert!(needles.iter().any(|n| e.contains(n)), "{t}: {e}");
        }
    }

    /// `{{ 1 / n }}` at n=0 (and a float past a double's range) is an error, not `inf` in the
    /// command (helper 75: `check` passed and `plan` printed `echo v=inf`).
    #[test]
    fn a_division_by_zero_in_a_command_is_an_error_not_inf() {
        let ctx = minijinja::context! { n => 0, big => 1e308 };
        refused(
            &ctx,
            &[
                "echo v={{ 1 / n }}",
                "echo {{ -1 / n }}",
                "echo {{ big * 10 }}",
                // through a filter or in a list (helper 76: `| int` gave the largest i128)
                "echo {{ (1 / n) | int }}",
                "echo {{ (1 / n) | string }}",
                "echo {{ [1 / n] }}",
                // joined or formatted into text
                "echo {{ [big * 10, 1] | join(',') }}",
                "echo {{ '%s' | format(big * 10) }}",
                "echo {{ '%s' | format([1 / n]) }}",
            ],
            &["(a division by zero, or past a double's range)"],
        );
        assert_eq!(
            render("echo {{ 1 / 4 }} inf", &ctx, Quote::Shell).unwrap(),
            "echo 0.25 inf"
        );
        assert_eq!(
            render(
                "{{ [1.5, 2] | join(',') }} {{ '%s-%d' | format('a', 3) }} {{ 'ab' | join('-') }}",
                &ctx,
                Quote::Plain
            )
            .unwrap(),
            "1.5,2 a-3 a-b"
        );
    }

    /// `divisibleby(0)` is an error, not minijinja's `a % 0` (a panic, in release builds
    /// too: `check`, `plan` and `run` exited 101); the test still answers for other divisors.
    #[test]
    fn divisible_by_zero_is_an_error_not_a_panic() {
        let ctx = minijinja::context! { k => 0, n => 6 };
        refused(
            &ctx,
            &[
                "{% if 4 is divisibleby(0) %}a{% endif %}",
                "{% if n is divisibleby(k) %}a{% endif %}",
                "{{ [4] | select('divisibleby', 0) | list }}",
                "{{ [4] | reject('divisibleby', 0.0) | list }}",
            ],
            &["divisibleby(0)"],
        );
        let r = |t: &str| render(t, &ctx, Quote::Plain).unwrap();
        assert_eq!(
            r("{{ [1, 2, 3, 4, n] | select('divisibleby', 2) | join(',') }}"),
            "2,4,6"
        );
        assert_eq!(
            r("{{ 4.5 is divisibleby(1.5) }} {{ 5 is divisibleby(2) }}"),
            "True False"
        );
        assert_eq!(
            r("{{ (-170141183460469231731687303715884105727 - 1) is divisibleby(-1) }}"),
            "True"
        );
        assert_eq!(r("{{ 'x' is divisibleby(2) }}"), "False");
    }

    /// A command no `exec` could start is refused when it renders (so by `check`): one holding
    /// a NUL (`nul byte found in provided data`), or longer than one argument may be
    /// (`Argument list too long`). A file's text (`Plain`) may be long.
    #[test]
    fn a_command_no_exec_could_start_is_refused_when_it_renders() {
        let ctx = minijinja::context! { x => "a\u{0}b", long => "y".repeat(MAX_COMMAND) };
        for q in [Quote::Shell, Quote::Arg, Quote::Plain] {
            let e = render("echo {{ x }}", &ctx, q).unwrap_err();
            assert!(e.contains("NUL"), "{e}");
        }
        for q in [Quote::Shell, Quote::Arg] {
            let e = render("echo {{ long }}", &ctx, q).unwrap_err();
            assert!(e.contains("more than a command line takes"), "{e}");
        }
        assert_eq!(
            render("{{ long }}", &ctx, Quote::Plain).unwrap().len(),
            MAX_COMMAND
        );
    }

    #[test]
    fn shell_formatter_quotes_values() {
        let ctx = minijinja::context! { x => "a b; $(rm -rf /)", n => 3 };
        let out = render("echo {{ x }} {{ n }}", &ctx, Quote::Shell).unwrap();
        assert_eq!(out, "echo 'a b; $(rm -rf /)' 3");
    }

    /// A value inside the author's quotes (single, double, `$'…'`, a `$( )` inside double
    /// quotes, in a `{% for %}`) reaches the shell as the text it is, never as code; a comment
    /// and a `{% raw %}` block are left as they are. Each rendered command runs in bash.
    #[test]
    fn a_value_inside_the_authors_quotes_is_still_one_literal_text() {
        let evil = "a'b \"c\" $(touch /nonexistent/x) `id` \\ $HOME !x";
        let sh = |cmd: &str| {
            let o = std::process::Command::new("bash")
                .args(["-c", cmd])
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{cmd}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            String::from_utf8(o.stdout).unwrap()
        };
        for v in [evil, "plain", "", "x y", "it's"] {
            let ctx = minijinja::context! { v => v, w => "w" };
            for (t, want) in quoted_cases(v) {
                let cmd = render(t, &ctx, Quote::Shell).unwrap_or_else(|e| panic!("{t}: {e}"));
                assert_eq!(sh(&cmd), want, "{t} with {v:?} rendered as {cmd}");
            }
        }
    }

    /// Each template with what bash prints for it when `v` is the given value (`w` is `"w"`).
    fn quoted_cases(v: &str) -> Vec<(&'static str, String)> {
        vec![
            ("echo 'm={{ v }}'", format!("m={v}\n")),
            ("echo \"m={{ v }}\"", format!("m={v}\n")),
            ("echo m={{ v }}", format!("m={v}\n")),
            ("echo \"x $(echo 'in {{ v }}')\"", format!("x in {v}\n")),
            (
                "echo \"x $(echo in {{ v }})\"",
                format!(
                    "x in {}\n",
                    v.split_whitespace().collect::<Vec<_>>().join(" ")
                ),
            ),
            ("printf '%s|' $'t\\t{{ v }}'", format!("t\t{v}|")),
            (
                "printf '%s|' 'a' \"b {{ v }} c\" 'd'",
                format!("a|b {v} c|d|"),
            ),
            ("echo \"{{ v }}{{ v }}\"", format!("{v}{v}\n")),
            (
                "echo '{% if v %}{{ v }};{% else %}-{% endif %}'",
                if v.is_empty() {
                    "-\n".to_string()
                } else {
                    format!("{v};\n")
                },
            ),
            ("echo '  {{- v -}}  '", format!("{v}\n")),
            ("echo \"a\" # it's {{ v }}", "a\n".to_string()),
            // a value's newline does not end the comment it stands in
            ("echo a # was: {{ v }}\necho b", "a\nb\n".to_string()),
            // an escaped blank does not start a comment
            (
                "printf '[%s]' a\\ #it's\n' '{{ v }}'",
                format!("[a #its\n][{v}]"),
            ),
            // what the reading does not follow is left as written, as before
            (
                "cat <<EOF\ndon't\nEOF\nprintf '[%s]' after\"{{ v }}\"",
                format!("don't\n[after{v}]"),
            ),
            (
                "cat <<-'END' ; printf '[%s]' \"x{{ v }}\"\n\tit's\n\tEND\n",
                format!("it's\n[x{v}]"),
            ),
            (
                "echo '{% raw %}${#a}{% endraw %}' '{{ v }}'",
                format!("${{#a}} {v}\n"),
            ),
            // `eval`, `parallel`, `ssh` as arguments are no commands; a script's own `-c`
            (
                "printf '[%s]' eval parallel ssh '{{ v }}'",
                format!("[eval][parallel][ssh][{v}]"),
            ),
            (
                "f() { printf '[%s]' \"$@\"; }; f bash run.sh -c 4 \"{{ v }}\"",
                format!("[bash][run.sh][-c][4][{v}]"),
            ),
            // a word such as `bash` or `-c` alone is no second shell
            ("printf '[%s]' bash \"{{ v }}\"", format!("[bash][{v}]")),
            ("echo -c; printf '[%s]' \"{{ v }}\"", format!("-c\n[{v}]")),
            // a default is no offset; brackets after a blank are no subscript
            (
                "printf '[%s]' \"{{ v }}\" \"${NOPE:-d}\" [0,1]",
                format!("[{v}][d][[0,1]]"),
            ),
            // `case` as a word, here-strings, shifts, escaped backslashes, mixed-quote
            // delimiters: read, not given up on
            ("printf '[%s]' case '{{ v }}'", format!("[case][{v}]")),
            ("cat <<< 'x'\nprintf '[%s]' '{{ v }}'", format!("x\n[{v}]")),
            ("printf '[%s]' \"C:\\\\{{ v }}\"", format!("[C:\\{v}]")),
            (
                "cat <<'E'OF\nit's\nEOF\nprintf '[%s]' '{{ v }}'",
                format!("it's\n[{v}]"),
            ),
            // comments after a line continuation, inside backticks, and one
            // holding `{% endraw %}` or a `{{` in a string of a block
            (
                "printf '[%s]' a \\\n# it's {{ v }}\necho done",
                "[a]done\n".to_string(),
            ),
            ("echo `echo a #x` '{{ v }}'", format!("a {v}\n")),
            (
                "echo {% raw %}'{{x}}' # a {% endraw %}\nprintf '[%s]' '{{ v }}'",
                format!("{{{{x}}}}\n[{v}]"),
            ),
            ("printf '[%s]' {{ w -}} #{{ v }}", format!("[w#{v}]")),
            // inside backticks, bare or quoted, within double quotes too
            (
                "echo `printf %s {{ v }}`x",
                format!("{}x\n", v.split_whitespace().collect::<Vec<_>>().join(" ")),
            ),
            ("echo `printf %s '{{ v }}'`", format!("{v}\n")),
            // a `#` that goes on a word (after `$( )`, backticks, `$(( ))`) is no comment
            ("printf '[%s]' $(echo a)#'{{ v }}'", format!("[a#{v}]")),
            ("printf '[%s]' `echo a`#'{{ v }}'", format!("[a#{v}]")),
            // a heredoc body shows the value as the word it is, and never runs it
            (
                "X=x; cat <<EOF\n{{ v }} $X\nEOF",
                format!("{} x\n", crate::util::shell::quote(v)),
            ),
            (
                "X=x; cat <<'EOF'\n{{ v }} $X\nEOF",
                format!("{} $X\n", crate::util::shell::quote(v)),
            ),
            (
                "echo a # {% if v == '{{' %}x{% endif %} {{ v }}",
                "a\n".to_string(),
            ),
            (
                "echo '{% raw %}{{ v }}{% endraw %}'",
                "{{ v }}\n".to_string(),
            ),
        ]
        .into_iter()
        .chain(quoted_cases_net_free(v))
        .collect()
    }

    /// [`quoted_cases`] whose text looks like the net's constructs and is none: quoted text,
    /// another program's code, a file's name, `|&`, a `${%`, an `esac` in quotes.
    fn quoted_cases_net_free(v: &str) -> Vec<(&'static str, String)> {
        vec![
            // what single quotes hold, a `((` in another program's code, a file's name, `|&`:
            // no construct of this shell's
            (
                "printf '[%s]' '{\"a\":[[1,2]]}' \"{{ v }}\"",
                format!("[{{\"a\":[[1,2]]}}][{v}]"),
            ),
            (
                "echo 'a b' | grep -cE '^[[:alpha:]]+'; printf '[%s]' \"{{ v }}\"",
                format!("1\n[{v}]"),
            ),
            (
                "printf '[%s]' \"{{ v }}\"; echo x | awk '{s[$1]+=1} END {print length(s)}'",
                format!("[{v}]1\n"),
            ),
            (
                "printf '[%s]' \"{{ v }}\" /data/PS1_v2.bin |& cat",
                format!("[{v}][/data/PS1_v2.bin]"),
            ),
            // brackets after a name in text are no subscript (`yes[…]`)
            (
                "if [ -n \"{{ v }}\" ]; then printf '[%s]' \"yes[{{ v }}]\"; fi",
                if v.is_empty() {
                    String::new()
                } else {
                    format!("[yes[{v}]]")
                },
            ),
            // a `${%` is a template block after a `$`, not `${…}`
            (
                "echo {% raw %}${% endraw %}; printf '[%s]' \"{{ v }}\"",
                format!("$\n[{v}]"),
            ),
            // after a `case`'s `esac`: read again (an `esac` in quotes or a comment is no end)
            (
                "case a in a) X=1;; *) X=2;; esac; printf '[%s]' '{{ v }}' \"$X\"",
                format!("[{v}][1]"),
            ),
            (
                "case a in a) echo \"esac\" # esac\n;; esac; printf '[%s]' \"{{ v }}\"",
                format!("esac\n[{v}]"),
            ),
        ]
    }

    /// A backslash before a tag, `${…}`, `$(( ))`, and what follows a `case` or an unread
    /// heredoc: left as written (moving the tag would break what worked), and each value there
    /// a plain word, or an error: quoted, it would not be one word, and its `$(…)` would run.
    #[test]
    fn what_the_reading_does_not_follow_is_left_as_written_with_plain_words_only() {
        let ctx = minijinja::context! { v => "plain", w => "w" };
        let evil = minijinja::context! { v => "$(touch /nonexistent/x)1", w => "w" };
        let empty = minijinja::context! { v => "", w => "w" };
        for (t, want) in plain_word_cases() {
            assert_eq!(render(t, &ctx, Quote::Shell).unwrap(), want, "{t}");
            for bad in [&evil, &empty] {
                let e = render(t, bad, Quote::Shell).unwrap_err();
                assert!(e.contains("must be a plain word"), "{t}: {e}");
                // in the author's words: no `invalid operation:`, no `(at `shell_word(…)`)`
                // of the quoting's own rewrite (helper 63)
                assert!(
                    !e.contains("invalid operation") && !e.contains("shell_word"),
                    "{t}: {e}"
                );
            }
        }
        // a read of those variables takes any value, quoted
        for t in [
            "echo $RANDOM {{ v }}",
            "echo \"${SECONDS}\" {{ v }}",
            "MY_RANDOM={{ v }}",
            // a literal `{{` is no map in a tag
            "echo {{ '{{' }} {{ v }}",
            // a `[` in an argument is a glob's, not a subscript (helper 74: refused)
            "echo v=1 [{{ v }}]",
            "echo x[{{ v }}]",
            // and `name[…]=x` as an argument of a program (helper 76: refused)
            "python3 train.py layers[{{ v }}]=1",
            "env a[{{ v }}]=1 true",
            "printf '%s\\n' [{{ v }}]",
        ] {
            assert!(render(t, &evil, Quote::Shell).is_ok(), "{t}");
        }
        let e = render("zsh -c \"echo {{ v }}\"", &evil, Quote::Shell).unwrap_err();
        assert!(
            e.starts_with("this command uses a second shell over a text (`bash -c`"),
            "{e}"
        );
        // an operator made by a value after `${NAME` is refused; a default holds a URL
        let op = minijinja::context! { v => "@P" };
        let e = render("x=1; echo \"${x{{ v }}}\"", &op, Quote::Shell).unwrap_err();
        assert!(e.contains("operator"), "{e}");
        let url = minijinja::context! { v => "http://h:80/x" };
        assert_eq!(
            render("echo \"${X:-{{ v }}}\"", &url, Quote::Shell).unwrap(),
            "echo \"${X:-http://h:80/x}\""
        );
        // the tag of a sure reading before them takes any value
        let ok = render("echo \"{{ v }}\" \"${X:-y}\"", &evil, Quote::Shell).unwrap();
        assert_eq!(ok, "echo \"\"'$(touch /nonexistent/x)1'\"\" \"${X:-y}\"");
    }

    /// Templates whose values must be plain words, each with what it renders for `plain`.
    fn plain_word_cases() -> Vec<(&'static str, &'static str)> {
        vec![
            ("echo x\\{{ v }}", "echo x\\plain"),
            ("echo $(( {{ v }} + 1 ))", "echo $(( plain + 1 ))"),
            ("echo \"${x[{{ v }}]}\"", "echo \"${x[plain]}\""),
            (
                "printf '[%s]' \"$(case a in a) printf %s {{ v }};; esac)\"",
                "printf '[%s]' \"$(case a in a) printf %s plain;; esac)\"",
            ),
            // backticks inside double quotes, where `\"` is a quote again
            (
                "printf '[%s]' \"`printf %s '{{ v }}'`\"",
                "printf '[%s]' \"`printf %s 'plain'`\"",
            ),
            // a heredoc body that runs commands: the value may stand in one, quoted or not
            (
                "cat <<EOF\n$(printf '[%s]' {{ v }})\nEOF",
                "cat <<EOF\n$(printf '[%s]' plain)\nEOF",
            ),
            (
                "cat <<EOF\nh=$(hostname) n={{ v }}\nEOF",
                "cat <<EOF\nh=$(hostname) n=plain\nEOF",
            ),
            // right after a `$` (a quoted value would read `$'…'`), also past a trim or a block
            ("printf '[%s]' ${{ v }}", "printf '[%s]' $plain"),
            ("printf '[%s]' $ {{- v }}", "printf '[%s]' $plain"),
            (
                "printf '[%s]' ${% if true %}{{ v }}{% endif %}",
                "printf '[%s]' $plain",
            ),
            // arithmetic: `for ((`, a subscript, `[[ -gt ]]`, `let`, `declare -i`
            (
                "for ((i=0; i<{{ v }}; i++)); do :; done",
                "for ((i=0; i<plain; i++)); do :; done",
            ),
            ("a[{{ v }}]=1", "a[plain]=1"),
            // an assignment after a keyword, a builtin that assigns, or an unknown quote
            ("time a[{{ v }}]=1", "time a[plain]=1"),
            ("export a[{{ v }}]=1", "export a[plain]=1"),
            ("x=\"a;b\" a[{{ v }}]=1 cmd", "x=\"a;b\" a[plain]=1 cmd"),
            ("echo `a[{{ v }}]=1`", "echo `a[plain]=1`"),
            ("eval a[{{ v }}]=1", "eval a[plain]=1"),
            ("x=1 a[{{ v }}]=1 cmd", "x=1 a[plain]=1 cmd"),
            (
                "true; declare -a a[{{ v }}]=1",
                "true; declare -a a[plain]=1",
            ),
            (
                "if [[ \"{{ v }}\" -gt 0 ]]; then :; fi",
                "if [[ \"plain\" -gt 0 ]]; then :; fi",
            ),
            ("let n={{ v }}", "let n=plain"),
            ("declare -i n={{ v }}", "declare -i n=plain"),
            // an `if` whose branches leave the quotes otherwise: what follows is not known
            (
                "{% if false %}\"{% endif %}printf '[%s]' '{{ v }}'",
                "printf '[%s]' 'plain'",
            ),
            // a trim or a block in a heredoc body: where it ends is not known
            (
                "cat <<EOF\nn={{ w -}}\nEOF\nprintf '[%s]' {{ v }}",
                "cat <<EOF\nn=wEOF\nprintf '[%s]' plain",
            ),
            // nested backticks
            (
                "echo `echo \\`printf %s {{ v }}\\``",
                "echo `echo \\`printf %s plain\\``",
            ),
            // a second shell reads the words again
            ("bash -c \"echo {{ v }}\"", "bash -c \"echo plain\""),
            (
                "timeout 9 /bin/sh -ec 'echo {{ v }}'",
                "timeout 9 /bin/sh -ec 'echo plain'",
            ),
            (
                "ssh node \"cd /x && ./b {{ v }}\"",
                "ssh node \"cd /x && ./b plain\"",
            ),
            ("eval \"echo {{ v }}\"", "eval \"echo plain\""),
        ]
        .into_iter()
        .chain(plain_word_net_cases())
        .chain(plain_word_variable_cases())
        .collect()
    }

    /// [`plain_word_cases`] of bash's variables that read their value again: the integer ones
    /// (an assignment is arithmetic) and the prompts (`set -x` expands `PS4`), however set; and
    /// a re-reading command after a prefix with a unit.
    fn plain_word_variable_cases() -> Vec<(&'static str, &'static str)> {
        vec![
            // bash's integer variables read an assignment as arithmetic
            ("RANDOM={{ v }}; echo $RANDOM", "RANDOM=plain; echo $RANDOM"),
            ("export SRANDOM={{ v }}", "export SRANDOM=plain"),
            ("OPTIND=\"{{ v }}\"", "OPTIND=\"plain\""),
            ("x=1 HISTCMD+={{ v }} true", "x=1 HISTCMD+=plain true"),
            (
                "for RANDOM in {{ v }}; do :; done",
                "for RANDOM in plain; do :; done",
            ),
            ("RANDOM[0]={{ v }}", "RANDOM[0]=plain"),
            // PS4 set another way; a re-reading command after a prefix with a unit (helper 66)
            (
                "for PS4 in {{ v }}; do set -x; true; done",
                "for PS4 in plain; do set -x; true; done",
            ),
            ("PS4[0]={{ v }}; set -x; true", "PS4[0]=plain; set -x; true"),
            // what the reading does not follow as bash and minijinja do (helper 66): a quote
            // inside `${…}`, a single quote left open in backticks, a map in a tag, `$'…'`
            // before an `esac`
            (
                "python3 t.py ${EXTRA:-'{\"warm\": 1}'} {{ v }}",
                "python3 t.py ${EXTRA:-'{\"warm\": 1}'} plain",
            ),
            ("echo ${x:-\"}\"} {{ v }}", "echo ${x:-\"}\"} plain"),
            (
                "X=`printf %s '`; echo {{ v }} #'`",
                "X=`printf %s '`; echo plain #'`",
            ),
            (
                "case a in a) echo $'it\\' esac '; echo {{ v }} ;; esac",
                "case a in a) echo $'it\\' esac '; echo plain ;; esac",
            ),
            // a trim that joins a value to a comment's line or a here-doc's end line
            ("echo start # note\n{{- v }}", "echo start # noteplain"),
            (
                "cat <<EOF\nhello\nEOF\n{{- v }}",
                "cat <<EOF\nhello\nEOFplain",
            ),
            (
                "timeout 30s su root -c \"echo {{ v }}\"",
                "timeout 30s su root -c \"echo plain\"",
            ),
            (
                "echo \"echo {{ v }}\" | timeout 30s bash",
                "echo \"echo plain\" | timeout 30s bash",
            ),
            (
                "setsid xargs echo <<< {{ v }}",
                "setsid xargs echo <<< plain",
            ),
            (
                "select OPTIND in {{ v }}; do break; done <<< 1",
                "select OPTIND in plain; do break; done <<< 1",
            ),
            (
                "for SECONDS in {{ v }}; do :; done",
                "for SECONDS in plain; do :; done",
            ),
        ]
    }

    /// [`plain_word_cases`] that the net finds: a construct anywhere in the command.
    fn plain_word_net_cases() -> Vec<(&'static str, &'static str)> {
        vec![
            // the net: a construct anywhere in the command makes every value a plain word
            (
                "echo $(( 1 << 2 ))\nprintf '[%s]' '{{ v }}'",
                "echo $(( 1 << 2 ))\nprintf '[%s]' 'plain'",
            ),
            ("[[ \"{{ v }}\" == zz ]]", "[[ \"plain\" == zz ]]"),
            (
                "printf '[%s]' $((1))#'{{ v }}'",
                "printf '[%s]' $((1))#'plain'",
            ),
            (
                "{% if true %}(( {{ v }} > 1 )){% endif %}",
                "(( plain > 1 ))",
            ),
            ("builtin let n={{ v }}", "builtin let n=plain"),
            ("declare -i n\nn={{ v }}", "declare -i n\nn=plain"),
            (
                "printf -v \"a[{{ v }}]\" %s 1",
                "printf -v \"a[plain]\" %s 1",
            ),
            ("read {{ v }} <<< 1", "read plain <<< 1"),
            ("trap 'echo {{ v }}' EXIT", "trap 'echo plain' EXIT"),
            (
                "bash -c \"\nprintf %s {{ v }}\n\"",
                "bash -c \"\nprintf %s plain\n\"",
            ),
            ("\\bash -c \"echo {{ v }}\"", "\\bash -c \"echo plain\""),
            (
                "\"$BASH\" -c \"echo {{ v }}\"",
                "\"$BASH\" -c \"echo plain\"",
            ),
            ("echo \"echo {{ v }}\" | bash", "echo \"echo plain\" | bash"),
            ("source <(echo echo {{ v }})", "source <(echo echo plain)"),
            (
                "echo {{ v }} | xargs -I{} sh -c 'printf %s {}'",
                "echo plain | xargs -I{} sh -c 'printf %s {}'",
            ),
            // a backslash that joins a heredoc's lines: where it ends is not known
            (
                "cat <<EOF\nlong \\\nEOF\nprintf '[%s]' {{ v }}\nEOF",
                "cat <<EOF\nlong \\\nEOF\nprintf '[%s]' plain\nEOF",
            ),
            // a variable that holds the value, read again: as arithmetic, by name, as a prompt
            ("i={{ v }}; a[i]=1", "i=plain; a[i]=1"),
            ("n={{ v }}; echo \"${x:n}\"", "n=plain; echo \"${x:n}\""),
            ("x={{ v }}; echo \"${!x}\"", "x=plain; echo \"${!x}\""),
            ("x={{ v }}; echo \"${x@P}\"", "x=plain; echo \"${x@P}\""),
            ("PS4={{ v }}; set -x; true", "PS4=plain; set -x; true"),
            ("compgen -W {{ v }}", "compgen -W plain"),
            ("printf -v{{ v }} %s x", "printf -vplain %s x"),
            // a shell's `-c` after other flags, a shell by another name, fed by a pipe or a
            // descriptor, as a co-process, or split from one word by `env -S`
            (
                "bash -o pipefail -c \"echo {{ v }}\"",
                "bash -o pipefail -c \"echo plain\"",
            ),
            (
                "flock /tmp/lk -c \"echo {{ v }}\"",
                "flock /tmp/lk -c \"echo plain\"",
            ),
            ("b''ash -c \"echo {{ v }}\"", "b''ash -c \"echo plain\""),
            ("$0 -c \"echo {{ v }}\"", "$0 -c \"echo plain\""),
            (
                "echo \"echo {{ v }}\" |& bash",
                "echo \"echo plain\" |& bash",
            ),
            (
                "echo \"echo {{ v }}\" | env bash",
                "echo \"echo plain\" | env bash",
            ),
            ("bash 0<<<\"echo {{ v }}\"", "bash 0<<<\"echo plain\""),
            ("coproc bash; echo {{ v }}", "coproc bash; echo plain"),
            (
                "env -S\"bash -c 'echo {{ v }}'\"",
                "env -S\"bash -c 'echo plain'\"",
            ),
            // right after `${NAME`: a value would be the operator
            ("x=1; echo \"${x{{ v }}}\"", "x=1; echo \"${xplain}\""),
            // offsets of `$@`, `$*`, an array's `[@]`; a subscript with blanks; a backslash
            // before a trimmed tag
            ("y={{ v }}; echo \"[${@:y}]\"", "y=plain; echo \"[${@:y}]\""),
            (
                "y={{ v }}; echo \"[${a[@]:y}]\"",
                "y=plain; echo \"[${a[@]:y}]\"",
            ),
            (
                "y={{ v }}; echo \"[${a[ y ]}]\"",
                "y=plain; echo \"[${a[ y ]}]\"",
            ),
            ("echo x\\ {{- v }}", "echo x\\plain"),
            // `eval` spelt through a block, a raw block, braces, `$'…'`, after a redirection or
            // a quoted assignment; a shell reading its standard input
            ("ev{% if true %}{% endif %}al {{ v }}", "eval plain"),
            (
                "echo '{% raw %}{{{% endraw %}'; eval {{ v }}",
                "echo '{{'; eval plain",
            ),
            ("{eval,} {{ v }}", "{eval,} plain"),
            ("$'eval' {{ v }}", "$'eval' plain"),
            (">/dev/null eval {{ v }}", ">/dev/null eval plain"),
            ("X=\"a b\" eval {{ v }}", "X=\"a b\" eval plain"),
            ("echo {{ v }} | { bash; }", "echo plain | { bash; }"),
            ("exec 0<<<{{ v }}; bash", "exec 0<<<plain; bash"),
            // a comment inside backticks: a value's backtick would end them
            ("echo `true # {{ v }}`", "echo `true # plain`"),
            // a `#` after a block: a comment, or part of a word, as the block renders
            (
                "{% if true %}# it's {{ v }}{% endif %}\necho done",
                "# it's plain\necho done",
            ),
            // before the `case`, the reading was sure: moved out of the quotes as ever
            (
                "echo \"{{ v }}\"; case a in a) echo \"{{ v }}\";; esac",
                "echo \"\"plain\"\"; case a in a) echo \"plain\";; esac",
            ),
            ("echo \"\\{{ v }}\"", "echo \"\\plain\""),
            ("echo \"${X:-{{ v }}}\"", "echo \"${X:-plain}\""),
            // a `#` after a block that may or may not render a blank before it
            (
                "printf '[%s]' a{% if false %} {% endif %}#'{{ v }}'",
                "printf '[%s]' a#'plain'",
            ),
            // a heredoc inside backticks, read twice by the shell
            (
                "echo `cat <<EOF\n{{ v }}\nEOF\n`",
                "echo `cat <<EOF\nplain\nEOF\n`",
            ),
        ]
    }

    /// A tag left open at the end, before a character of several bytes, is a syntax error,
    /// not a panic.
    #[test]
    fn an_open_tag_before_a_wide_character_is_an_error() {
        let ctx = minijinja::context! { v => "x" };
        refused(
            &ctx,
            &[
                "echo {{ v }} {# ü;",
                "echo {{ v }} {% ü;",
                "echo '{{ v }}' {#ü",
            ],
            &["syntax error", "names no statement"],
        );
    }

    /// A value that holds the delimiter's line would end the heredoc: refused.
    #[test]
    fn a_value_that_would_end_a_heredoc_is_refused() {
        let ctx = minijinja::context! { v => "x\nEOF\ntouch /nonexistent/y #" };
        for t in ["cat <<EOF\n{{ v }}\nEOF", "cat <<'EOF'\n{{ v }}\nEOF"] {
            let e = render(t, &ctx, Quote::Shell).unwrap_err();
            assert!(e.contains("would end the heredoc"), "{t}: {e}");
        }
    }

    /// `indent` with a huge width and a list repeated by `*` past what a command prints are
    /// refused before they take memory (3 GB, 2.4 GB before); small ones render.
    #[test]
    fn a_huge_indent_or_repeated_list_is_refused_not_allocated() {
        let ctx = minijinja::context! {};
        refused(
            &ctx,
            &[
                "{{ 'x' | indent(3000000000) }}",
                "{{ 'x' | indent(width=3000000000) }}",
                "{{ [1]*100000000 }}",
                "{{ ([1]*10000) * 10000 }}",
            ],
            &["more than 1024", "too long to print"],
        );
        assert_eq!(
            render("{{ 'a\nb' | indent(2) }}", &ctx, Quote::Plain).unwrap(),
            "a\n  b"
        );
        assert_eq!(
            render("{{ [1, 2] * 2 }}", &ctx, Quote::Shell).unwrap(),
            "'[1, 2, 1, 2]'"
        );
    }

    #[test]
    fn date_filter_formats() {
        let ctx = minijinja::context! { started => "2026-11-29T21:48:05+00:00" };
        let out = render(
            "e2e_{{ started | date(format='%m%d%H%M') }}",
            &ctx,
            Quote::Plain,
        )
        .unwrap();
        assert_eq!(out, "e2e_11292148");
    }
}
