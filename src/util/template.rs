//! The minijinja environment with expr's filters (`date`), shell-quoting or not: the experiment's
//! templates (`model::template`, with their limits and located errors) and the report's custom
//! templates build on it.

use minijinja::{Environment, UndefinedBehavior, Value};

/// Whether interpolated values are shell-quoted (commands) or inserted as they are (paths).
#[derive(Clone, Copy, PartialEq)]
pub enum Quote {
    Shell,
    Plain,
}

fn date_filter(v: Value, format: Option<String>) -> Result<String, minijinja::Error> {
    let s = v.to_string();
    let t = chrono::DateTime::parse_from_rfc3339(&s).map_err(|e| {
        minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("not a timestamp: {e}"),
        )
    })?;
    let format = format.as_deref().unwrap_or("%Y%m%d%H%M%S");
    let items: Vec<chrono::format::Item> = chrono::format::StrftimeItems::new(format).collect();
    if items
        .iter()
        .any(|i| matches!(i, chrono::format::Item::Error))
    {
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("`{format}` is not a date format chrono can print (strftime codes such as %Y %m %d %H %M %S)"),
        ));
    }
    let mut out = String::new();
    use std::fmt::Write;
    write!(out, "{}", t.format_with_items(items.into_iter())).map_err(|_| {
        minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("`{format}` cannot be printed for this date"),
        )
    })?;
    Ok(out)
}

/// A template environment with expr's filters.
pub fn env(quote: Quote) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_filter("date", |v: Value, kwargs: minijinja::value::Kwargs| {
        let f: Option<String> = kwargs.get("format")?;
        kwargs.assert_all_used()?;
        date_filter(v, f)
    });
    if quote == Quote::Shell {
        env.set_formatter(|out, _state, value| {
            let s = if value.is_undefined() || value.is_none() {
                String::new()
            } else {
                value.to_string()
            };
            out.write_str(&crate::util::shell::quote(&s)).map_err(|_| {
                minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "write failed")
            })
        });
    }
    env
}
