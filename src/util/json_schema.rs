//! A small JSON Schema validator for what checkouts describe their config files with: `type`,
//! `enum`, `const`, `required`, `properties`, `additionalProperties`, `items`, the number,
//! length and count bounds, `pattern`, `allOf`/`anyOf`/`oneOf`/`not`, `if`/`then`/`else`, and
//! local `$ref`s (`#/$defs/…`). Annotations (`description`, `default`, `format`, `title`, …)
//! are not checked. Messages read as the common validators' do (`"x" is a required property`,
//! `32 is greater than the maximum of 16`). It replaces a crate that brought ~40 crates into the
//! build for this one use.

use serde_json::{Map, Value};

/// How deep a schema may nest through `$ref`s and subschemas (a `$ref` cycle stops here).
const MAX_DEPTH: usize = 64;

/// What a violation is, where expr treats kinds apart.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A required property is missing: its name.
    Required(String),
    /// A value outside an `enum`.
    Enum,
    Other,
}

/// One violation: where in the instance (a JSON pointer), what kind, and the message.
#[derive(Debug, Clone)]
pub struct Violation {
    pub path: String,
    pub kind: Kind,
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A schema, checked to be one this validator can apply.
pub struct Validator {
    root: Value,
}

impl Validator {
    /// A schema document: an object or a boolean, whose local `$ref`s resolve.
    pub fn new(root: Value) -> Result<Validator, String> {
        if !root.is_object() && !root.is_boolean() {
            return Err("a schema is an object or a boolean".into());
        }
        let v = Validator { root };
        v.check_refs(&v.root, 0)?;
        Ok(v)
    }

    fn check_refs(&self, s: &Value, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("the schema nests too deep".into());
        }
        match s {
            Value::Object(m) => {
                if let Some(r) = m.get("$ref") {
                    let r = r.as_str().ok_or("`$ref` is not a string")?;
                    self.resolve(r)?;
                }
                for (k, v) in m {
                    if k != "enum" && k != "const" && k != "default" && k != "examples" {
                        self.check_refs(v, depth + 1)?;
                    }
                }
                Ok(())
            }
            Value::Array(a) => a.iter().try_for_each(|v| self.check_refs(v, depth + 1)),
            _ => Ok(()),
        }
    }

    /// A local reference (`#`, `#/$defs/x`), as a JSON pointer into the document.
    fn resolve(&self, r: &str) -> Result<&Value, String> {
        let pointer = r
            .strip_prefix('#')
            .ok_or_else(|| format!("`$ref` {r} is not local (only `#/…` is followed)"))?;
        self.root
            .pointer(pointer)
            .ok_or_else(|| format!("`$ref` {r} names nothing in the schema"))
    }

    /// Every violation of `doc`.
    pub fn errors(&self, doc: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        self.check(&self.root, doc, "", &mut out, 0);
        out
    }

    /// Whether `doc` has no violation.
    pub fn is_valid(&self, doc: &Value) -> bool {
        self.errors(doc).is_empty()
    }

    fn check(&self, s: &Value, v: &Value, at: &str, out: &mut Vec<Violation>, depth: usize) {
        let mut push = |kind: Kind, message: String| {
            out.push(Violation {
                path: at.to_string(),
                kind,
                message,
            })
        };
        if depth > MAX_DEPTH {
            push(Kind::Other, "the schema nests too deep to check".into());
            return;
        }
        let m = match s {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                push(Kind::Other, format!("False schema does not allow {v}"));
                return;
            }
            Value::Object(m) => m,
            _ => return,
        };
        if let Some(r) = m.get("$ref").and_then(Value::as_str) {
            if let Ok(target) = self.resolve(r) {
                self.check(target, v, at, out, depth + 1);
            }
        }
        check_type(m, v, at, out);
        if let Some(x) = v.as_f64() {
            check_number(m, v, x, at, out);
        }
        if let Some(text) = v.as_str() {
            check_string(m, v, text, at, out);
        }
        if let Some(items) = v.as_array() {
            self.check_array(m, v, items, at, out, depth);
        }
        if let Some(obj) = v.as_object() {
            self.check_object(m, obj, at, out, depth);
        }
        self.check_combinators(m, v, at, out, depth);
    }

    /// `minItems`, `maxItems` and `items` (one schema for all, or one per position).
    fn check_array(
        &self,
        m: &Map<String, Value>,
        v: &Value,
        items: &[Value],
        at: &str,
        out: &mut Vec<Violation>,
        depth: usize,
    ) {
        let other = |out: &mut Vec<Violation>, message: String| other_at(out, at, message);
        let n = items.len() as u64;
        if let Some(min) = m.get("minItems").and_then(Value::as_u64).filter(|l| n < *l) {
            other(out, format!("{v} has less than {min} item{}", plural(min)));
        }
        if let Some(max) = m.get("maxItems").and_then(Value::as_u64).filter(|l| n > *l) {
            other(out, format!("{v} has more than {max} item{}", plural(max)));
        }
        match m.get("items") {
            Some(Value::Array(each)) => {
                for (i, (item, s)) in items.iter().zip(each).enumerate() {
                    self.check(s, item, &format!("{at}/{i}"), out, depth + 1);
                }
            }
            Some(s) => {
                for (i, item) in items.iter().enumerate() {
                    self.check(s, item, &format!("{at}/{i}"), out, depth + 1);
                }
            }
            None => {}
        }
    }

    /// `required`, `properties` and `additionalProperties`.
    fn check_object(
        &self,
        m: &Map<String, Value>,
        obj: &Map<String, Value>,
        at: &str,
        out: &mut Vec<Violation>,
        depth: usize,
    ) {
        let other = |out: &mut Vec<Violation>, message: String| other_at(out, at, message);
        if let Some(Value::Array(req)) = m.get("required") {
            for r in req.iter().filter_map(Value::as_str) {
                if !obj.contains_key(r) {
                    out.push(Violation {
                        path: at.into(),
                        kind: Kind::Required(r.to_string()),
                        message: format!("\"{r}\" is a required property"),
                    });
                }
            }
        }
        let props = m.get("properties").and_then(Value::as_object);
        for (k, item) in obj {
            let below = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
            match props.and_then(|p| p.get(k)) {
                Some(s) => self.check(s, item, &below, out, depth + 1),
                None => match m.get("additionalProperties") {
                    Some(Value::Bool(false)) => other(
                        out,
                        format!("Additional properties are not allowed ('{k}' was unexpected)"),
                    ),
                    Some(s @ Value::Object(_)) => self.check(s, item, &below, out, depth + 1),
                    _ => {}
                },
            }
        }
    }

    /// `allOf`, `anyOf`, `oneOf`, `not` and `if`/`then`/`else`.
    fn check_combinators(
        &self,
        m: &Map<String, Value>,
        v: &Value,
        at: &str,
        out: &mut Vec<Violation>,
        depth: usize,
    ) {
        let other = |out: &mut Vec<Violation>, message: String| other_at(out, at, message);
        if let Some(Value::Array(all)) = m.get("allOf") {
            for s in all {
                self.check(s, v, at, out, depth + 1);
            }
        }
        let passes = |s: &Value| {
            let mut e = Vec::new();
            self.check(s, v, at, &mut e, depth + 1);
            e.is_empty()
        };
        if let Some(Value::Array(any)) = m.get("anyOf") {
            if !any.iter().any(passes) {
                other(
                    out,
                    format!(
                        "{v} is not valid under any of the schemas listed in the 'anyOf' keyword"
                    ),
                );
            }
        }
        if let Some(Value::Array(one)) = m.get("oneOf") {
            match one.iter().filter(|s| passes(s)).count() {
                1 => {}
                0 => other(
                    out,
                    format!("{v} is not valid under any of the schemas listed in the 'oneOf' keyword"),
                ),
                _ => other(
                    out,
                    format!("{v} is valid under more than one of the schemas listed in the 'oneOf' keyword"),
                ),
            }
        }
        if let Some(not) = m.get("not") {
            if passes(not) {
                other(out, format!("{v} is not allowed for {not}"));
            }
        }
        if let Some(cond) = m.get("if") {
            let branch = if passes(cond) {
                m.get("then")
            } else {
                m.get("else")
            };
            if let Some(b) = branch {
                self.check(b, v, at, out, depth + 1);
            }
        }
    }
}

/// `type`, `enum` and `const`.
fn check_type(m: &Map<String, Value>, v: &Value, at: &str, out: &mut Vec<Violation>) {
    if let Some(t) = m.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| is_type(v, t)) {
            let want = types
                .iter()
                .map(|t| format!("\"{t}\""))
                .collect::<Vec<_>>()
                .join(", ");
            out.push(Violation {
                path: at.into(),
                kind: Kind::Other,
                message: format!("{v} is not of type {want}"),
            });
        }
    }
    if let Some(Value::Array(options)) = m.get("enum") {
        if !options.iter().any(|o| equal(o, v)) {
            out.push(Violation {
                path: at.into(),
                kind: Kind::Enum,
                message: format!("{v} is not one of {}", one_of(options)),
            });
        }
    }
    if let Some(c) = m.get("const") {
        if !equal(c, v) {
            out.push(Violation {
                path: at.into(),
                kind: Kind::Other,
                message: format!("{c} was expected"),
            });
        }
    }
}

/// A violation of kind `Other` at `at`.
fn other_at(out: &mut Vec<Violation>, at: &str, message: String) {
    out.push(Violation {
        path: at.into(),
        kind: Kind::Other,
        message,
    })
}

/// `minimum`, `maximum`, `exclusiveMinimum` and `exclusiveMaximum` of the number `x` (`v`).
fn check_number(m: &Map<String, Value>, v: &Value, x: f64, at: &str, out: &mut Vec<Violation>) {
    let other = |out: &mut Vec<Violation>, message: String| other_at(out, at, message);
    let bound = |k: &str| m.get(k).and_then(Value::as_f64).map(|b| (b, &m[k]));
    if let Some((b, shown)) = bound("minimum").filter(|(b, _)| x < *b) {
        let _ = b;
        other(out, format!("{v} is less than the minimum of {shown}"));
    }
    if let Some((_, shown)) = bound("maximum").filter(|(b, _)| x > *b) {
        other(out, format!("{v} is greater than the maximum of {shown}"));
    }
    if let Some((_, shown)) = bound("exclusiveMinimum").filter(|(b, _)| x <= *b) {
        other(
            out,
            format!("{v} is less than or equal to the minimum of {shown}"),
        );
    }
    if let Some((_, shown)) = bound("exclusiveMaximum").filter(|(b, _)| x >= *b) {
        other(
            out,
            format!("{v} is greater than or equal to the maximum of {shown}"),
        );
    }
}

/// `minLength`, `maxLength` and `pattern` of the string `text` (`v`).
fn check_string(m: &Map<String, Value>, v: &Value, text: &str, at: &str, out: &mut Vec<Violation>) {
    let other = |out: &mut Vec<Violation>, message: String| other_at(out, at, message);
    let n = text.chars().count() as u64;
    if let Some(min) = m
        .get("minLength")
        .and_then(Value::as_u64)
        .filter(|l| n < *l)
    {
        other(
            out,
            format!("{v} is shorter than {min} character{}", plural(min)),
        );
    }
    if let Some(max) = m
        .get("maxLength")
        .and_then(Value::as_u64)
        .filter(|l| n > *l)
    {
        other(
            out,
            format!("{v} is longer than {max} character{}", plural(max)),
        );
    }
    if let Some(p) = m.get("pattern").and_then(Value::as_str) {
        if regex::Regex::new(p).is_ok_and(|re| !re.is_match(text)) {
            other(out, format!("{v} does not match \"{p}\""));
        }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
fn one_of(options: &[Value]) -> String {
    let shown: Vec<String> = options.iter().map(Value::to_string).collect();
    match shown.split_last() {
        None => "nothing".into(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// JSON equality, with 1 and 1.0 equal (as the spec has numbers compare by value).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| equal(a, b)))
        }
        _ => a == b,
    }
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => {
            v.as_i64().is_some()
                || v.as_u64().is_some()
                || v.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(schema: Value, doc: Value) -> Vec<(String, String)> {
        Validator::new(schema)
            .unwrap()
            .errors(&doc)
            .into_iter()
            .map(|e| (e.path, e.message))
            .collect()
    }

    #[test]
    fn the_keywords_a_recstore_schema_uses_with_their_messages() {
        let schema = json!({
            "type": "object",
            "required": ["cache_ps", "client"],
            "$defs": {"server": {"type": "object", "required": ["host", "port"],
                "properties": {"host": {"type": "string", "minLength": 1},
                               "port": {"type": "integer", "minimum": 1, "maximum": 65535}}}},
            "properties": {
                "cache_ps": {"type": "object",
                    "required": ["ps_type", "num_threads", "servers"],
                    "properties": {
                        "ps_type": {"enum": ["GRPC", "BRPC"]},
                        "num_threads": {"type": "integer", "minimum": 1, "maximum": 16},
                        "servers": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/server"}},
                        "kv": {"type": "object",
                            "allOf": [{"if": {"properties": {"value_type": {"const": "DRAM"}}, "required": ["value_type"]},
                                       "then": {"required": ["capacity"]}}]}
                    }}
            }
        });
        let doc = json!({
            "cache_ps": {"ps_type": "LOCAL_SHM", "num_threads": 32,
                "servers": [{"host": "", "port": 0}], "kv": {"value_type": "DRAM"}}
        });
        let got = messages(schema, doc);
        let want = [
            ("", "\"client\" is a required property"),
            ("/cache_ps/kv", "\"capacity\" is a required property"),
            (
                "/cache_ps/num_threads",
                "32 is greater than the maximum of 16",
            ),
            (
                "/cache_ps/ps_type",
                "\"LOCAL_SHM\" is not one of \"GRPC\" or \"BRPC\"",
            ),
            (
                "/cache_ps/servers/0/host",
                "\"\" is shorter than 1 character",
            ),
            (
                "/cache_ps/servers/0/port",
                "0 is less than the minimum of 1",
            ),
        ];
        let mut got = got;
        got.sort();
        assert_eq!(
            got,
            want.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn odd_schemas_are_refused_or_bounded_never_a_stack_overflow() {
        assert!(Validator::new(json!(3)).is_err());
        assert!(Validator::new(json!({"$ref": "#/nowhere"})).is_err());
        assert!(Validator::new(json!({"$ref": "http://example.com/s.json"})).is_err());
        // a $ref cycle: checked to a depth, then said
        let cyc =
            Validator::new(json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}))
                .unwrap();
        let e = cyc.errors(&json!(1));
        assert!(
            e.iter().any(|e| e.message.contains("nests too deep")),
            "{e:?}"
        );
        // boolean schemas, types, anyOf/oneOf/not, additionalProperties
        assert!(Validator::new(json!(true))
            .unwrap()
            .is_valid(&json!({"x": 1})));
        assert!(!Validator::new(json!(false)).unwrap().is_valid(&json!(1)));
        let v = Validator::new(json!({"type": ["integer", "null"]})).unwrap();
        assert!(v.is_valid(&json!(null)) && v.is_valid(&json!(3)) && !v.is_valid(&json!(2.5)));
        let v = Validator::new(json!({"oneOf": [{"minimum": 1}, {"maximum": 5}]})).unwrap();
        assert!(!v.is_valid(&json!(3)) && v.is_valid(&json!(9)));
        let v = Validator::new(json!({"additionalProperties": false, "properties": {"a": {}}}))
            .unwrap();
        assert!(!v.is_valid(&json!({"b": 1})) && v.is_valid(&json!({"a": 1})));
        let v = Validator::new(json!({"not": {"type": "string"}, "enum": [1, 2.0]})).unwrap();
        assert!(v.is_valid(&json!(2)) && !v.is_valid(&json!("1")));
    }
}
