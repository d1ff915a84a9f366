//! summary.json: the report's data as it is, for scripts.

use crate::report::format::{Format, Report};
use crate::results::atomic;

pub struct Json;

impl Format for Json {
    fn write(&self, r: &Report) -> Result<Vec<String>, String> {
        let text = serde_json::to_string_pretty(r.data).map_err(|e| e.to_string())?;
        atomic::write(&r.dir.join("summary.json"), text.as_bytes())?;
        Ok(vec!["summary.json".into()])
    }
}
