//! `expr report DIR --template FILE`: the user's own minijinja template over the report's
//! data, under a budget (instructions, output size, time) and with errors that name the file,
//! the line and the value a template asked for.

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use minijinja::{ErrorKind, Value};

/// What a template may spend before it is stopped.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// minijinja's instructions (its fuel).
    pub fuel: u64,
    /// Bytes of output.
    pub bytes: usize,
    /// Wall time.
    pub time: Duration,
}

impl Budget {
    /// A report template's: far more than a loop over 100k points takes, far less than a
    /// runaway nested loop would (documented in docs/report.md).
    pub const REPORT: Budget = Budget {
        fuel: 50_000_000,
        bytes: 64 << 20,
        time: Duration::from_secs(60),
    };
}

/// A writer that takes up to `max` bytes, then refuses.
struct Capped {
    buf: Vec<u8>,
    max: usize,
    over: bool,
}

impl Write for Capped {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + b.len() > self.max {
            self.over = true;
            return Err(std::io::Error::other("output budget"));
        }
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Render `text` (the file `name`) over `ctx` within `budget`.
pub fn render(name: &str, text: String, ctx: Value, budget: Budget) -> Result<String, String> {
    let (tx, rx) = mpsc::channel();
    let owned = name.to_string();
    // in a thread of its own, so a template that runs past its time can be left behind (the
    // command ends with the error; the process takes the thread with it)
    std::thread::Builder::new()
        .name("template".into())
        .stack_size(16 << 20)
        .spawn(move || {
            let _ = tx.send(render_here(&owned, &text, ctx, budget));
        })
        .map_err(|e| format!("{name}: cannot render: {e}"))?;
    match rx.recv_timeout(budget.time) {
        Ok(r) => r,
        Err(_) => Err(format!(
            "{name}: the template ran past its budget of {:?} of rendering (docs/report.md, \"Your own template\")",
            budget.time
        )),
    }
}

fn render_here(name: &str, text: &str, ctx: Value, budget: Budget) -> Result<String, String> {
    if let Some((at, n)) = crate::util::template::too_many_operators(text) {
        let line = text[..at.start].matches('\n').count() + 1;
        return Err(format!(
            "{name}:{line}: a block holds {n} operators (at most {}): the template is refused",
            crate::util::template::MAX_OPERATORS
        ));
    }
    let mut env = crate::util::template::env(crate::util::template::Quote::Plain);
    env.add_filter("km", |v: f64| crate::util::fmt::km(v));
    env.set_fuel(Some(budget.fuel));
    env.add_template_owned(name.to_string(), text.to_string())
        .map_err(|e| explain(&e, name, text, &ctx, budget))?;
    let t = env
        .get_template(name)
        .map_err(|e| explain(&e, name, text, &ctx, budget))?;
    let mut out = Capped {
        buf: Vec::new(),
        max: budget.bytes,
        over: false,
    };
    let done =
        crate::util::memcap::capped(&format!("rendering the report template {name}"), || {
            t.render_captured_to(ctx.clone(), &mut out).map(|_| ())
        });
    match done {
        Ok(_) => String::from_utf8(out.buf).map_err(|e| format!("{name}: {e}")),
        Err(_) if out.over => Err(format!(
            "{name}: the template's output passed its budget of {} (docs/report.md, \"Your own template\")",
            if budget.bytes >= 1 << 20 {
                format!("{} MiB", budget.bytes >> 20)
            } else {
                format!("{} bytes", budget.bytes)
            }
        )),
        Err(e) => Err(explain(&e, name, text, &ctx, budget)),
    }
}

/// The names a template sees at its top level.
fn top_names(ctx: &Value) -> Vec<String> {
    ctx.try_iter()
        .map(|it| it.filter_map(|k| k.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// The field names of the maps anywhere in the data below its top level (the first item of each
/// list stands for the rest), sorted.
fn nested_fields(ctx: &Value) -> Vec<String> {
    fn walk(v: &Value, depth: usize, out: &mut std::collections::BTreeSet<String>) {
        if depth > 6 {
            return;
        }
        match v.kind() {
            minijinja::value::ValueKind::Map => {
                let Ok(keys) = v.try_iter() else { return };
                for k in keys {
                    if let Some(name) = k.as_str() {
                        if depth > 0 {
                            out.insert(name.to_string());
                        }
                        if let Ok(inner) = v.get_item(&k) {
                            walk(&inner, depth + 1, out);
                        }
                    }
                }
            }
            minijinja::value::ValueKind::Seq => {
                if let Ok(first) = v.get_item(&Value::from(0)) {
                    walk(&first, depth + 1, out);
                }
            }
            _ => {}
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(ctx, 0, &mut out);
    out.into_iter().collect()
}

/// The whole `{{ … }}` or `{% … %}` around `r` (minijinja's range may be a part of it:
/// `[0].lan` of `points[0].lan`), else `r` itself.
fn enclosing(text: &str, r: std::ops::Range<usize>) -> Option<&str> {
    let before = text.get(..r.start)?;
    let open = before
        .rfind("{{")
        .into_iter()
        .chain(before.rfind("{%"))
        .max();
    let after = text.get(r.end..)?;
    let close = [after.find("}}"), after.find("%}")]
        .into_iter()
        .flatten()
        .min();
    match (open, close) {
        (Some(o), Some(c)) if !text[o + 2..r.start].contains("}}") => {
            text.get(o + 2..r.end + c).map(|s| {
                s.trim_start_matches(['-', '+'])
                    .trim_end_matches(['-', '+'])
            })
        }
        _ => text.get(r),
    }
}

/// A template error as `FILE:LINE: what`, with the expression it failed on and, for an
/// undefined name, the names there are.
fn explain(e: &minijinja::Error, name: &str, text: &str, ctx: &Value, budget: Budget) -> String {
    let at = match e.line() {
        Some(l) => format!("{name}:{l}"),
        None => name.to_string(),
    };
    let expr = e
        .range()
        .and_then(|r| enclosing(text, r))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    match e.kind() {
        ErrorKind::UndefinedError => {
            let expr = expr.unwrap_or_default();
            let first: String = expr
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let names = top_names(ctx);
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            // a field of a loop's item (`{{ g.meen }}`): the fields the data has anywhere
            let field: String = expr
                .rsplit('.')
                .next()
                .filter(|_| expr.contains('.'))
                .unwrap_or("")
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let fields = nested_fields(ctx);
            let help = if !field.is_empty() && !first.is_empty() && !names.contains(&first) && !fields.contains(&field) {
                let refs: Vec<&str> = fields.iter().map(String::as_str).collect();
                crate::util::suggest::help_for(&field, &refs, "the fields the report data has")
            } else if !first.is_empty() && !names.contains(&first) {
                crate::util::suggest::help_for(&first, &refs, "the names a report template sees")
            } else {
                "a field it does not have; the data's fields are in docs/report.md (\"Your own template\")".into()
            };
            format!("{at}: undefined value `{expr}`; {help}")
        }
        ErrorKind::OutOfFuel => format!(
            "{at}: the template ran out of its budget of {} instructions (docs/report.md, \"Your own template\")",
            budget.fuel
        ),
        _ => {
            let what = e
                .detail()
                .map(str::to_string)
                .unwrap_or_else(|| e.kind().to_string());
            match expr {
                Some(x) if x.len() <= 80 => format!("{at}: {what} (in `{x}`)"),
                _ => format!("{at}: {what}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Value {
        Value::from_serialize(serde_json::json!({"experiment": "t", "points": [{"lane": "a"}]}))
    }

    fn small() -> Budget {
        Budget {
            fuel: 100_000,
            bytes: 1 << 16,
            time: Duration::from_secs(5),
        }
    }

    #[test]
    fn an_undefined_name_is_named_with_its_file_line_and_the_names_there_are() {
        let e = render("t.j2", "ok\n{{ experimnt }}".into(), ctx(), small()).unwrap_err();
        assert_eq!(
            e,
            "t.j2:2: undefined value `experimnt`; did you mean `experiment`?"
        );
        let e = render("t.j2", "{{ zzz }}".into(), ctx(), small()).unwrap_err();
        assert_eq!(
            e,
            "t.j2:1: undefined value `zzz`; the names a report template sees are: `experiment`, `points`"
        );
        // a loop item's field: the fields the data has (it listed the top-level names)
        let e = render(
            "t.j2",
            "{% for p in points %}{{ p.lanee }}{% endfor %}".into(),
            ctx(),
            small(),
        )
        .unwrap_err();
        assert_eq!(e, "t.j2:1: undefined value `p.lanee`; did you mean `lane`?");
        let e = render("t.j2", "{{ points[0].lan }}".into(), ctx(), small()).unwrap_err();
        assert!(
            e.starts_with("t.j2:1: undefined value `points[0].lan`; a field"),
            "{e}"
        );
    }

    #[test]
    fn a_runaway_template_stops_at_its_budget_with_the_limit_named() {
        let quiet =
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
        let e = render("t.j2", quiet.into(), ctx(), small()).unwrap_err();
        assert!(e.contains("budget of 100000 instructions"), "{e}");
        let loops = "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}";
        let big = Budget {
            fuel: 1 << 40,
            ..small()
        };
        let e = render("t.j2", loops.into(), ctx(), big).unwrap_err();
        assert!(e.contains("output passed its budget of 65536 bytes"), "{e}");
        let slow = Budget {
            fuel: 1 << 40,
            bytes: usize::MAX,
            time: Duration::from_millis(300),
        };
        let t = std::time::Instant::now();
        let e = render(
            "t.j2",
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
                .into(),
            ctx(),
            slow,
        )
        .unwrap_err();
        assert!(e.contains("ran past its budget of 300ms"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(3));
        // within budget: rendered
        assert_eq!(
            render("t.j2", "{{ experiment }}".into(), ctx(), small()).unwrap(),
            "t"
        );
    }
}
