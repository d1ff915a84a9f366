//! Built-in benchmark kinds, one folder each, behind the `Kind` trait (`kind_api/kind.rs`); `ALL` is the
//! only list of kinds.

pub mod bench;
pub mod dataset_rt;
pub mod ep_bench;
pub mod recstore_e2e;

pub mod ranks;

pub use crate::kind_api::kind::{Kind, KindSpec};

use crate::model::schema::NodeSpec;
use crate::model::KindId;

/// The built-in kinds, each described by its own folder (`<kind>/mod.rs`: `SPEC`).
pub const ALL: &[&KindSpec] = &[
    &recstore_e2e::SPEC,
    &ep_bench::SPEC,
    &dataset_rt::SPEC,
    &bench::SPEC,
];

/// Kinds registered at run time (a test's own kind), after the built-in ones.
static REGISTERED: std::sync::RwLock<Vec<&'static KindSpec>> = std::sync::RwLock::new(Vec::new());

/// Add a kind that is not in `ALL` (a test defines one to keep CONTRIBUTING.md's walk-through
/// honest): from then on the decoder, check, plan, run and report find it as they find a
/// built-in one. Refused when its id or node name is taken.
pub fn register(k: &'static KindSpec) -> Result<(), String> {
    let mut r = REGISTERED
        .write()
        .map_err(|_| "the kind registry is poisoned".to_string())?;
    if let Some(old) = ALL
        .iter()
        .chain(r.iter())
        .find(|o| o.id == k.id || o.node == k.node)
    {
        if std::ptr::eq(*old, k) {
            return Ok(());
        }
        return Err(format!(
            "a kind named `{}` (node `{}`) is already known",
            old.id.0, old.node
        ));
    }
    r.push(k);
    Ok(())
}

/// Every kind: the built-in ones (`ALL`), then those registered.
pub fn all() -> Vec<&'static KindSpec> {
    let mut v = ALL.to_vec();
    if let Ok(r) = REGISTERED.read() {
        v.extend(r.iter().copied());
    }
    v
}

/// manifest.csv's header for an experiment: its first bench's columns, and any other bench's
/// own before `log_path`.
pub fn manifest_columns(exp: &crate::model::Experiment) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for (i, b) in exp.benches.iter().enumerate() {
        if i == 0 {
            v = of(b.kind).manifest_columns(b);
            continue;
        }
        for c in of(b.kind).manifest_columns(b) {
            if v.contains(&c) {
                continue;
            }
            match v.iter().position(|x| x == "log_path") {
                Some(i) => v.insert(i, c),
                None => v.push(c),
            }
        }
    }
    if v.is_empty() {
        v = crate::results::manifest::CORE
            .iter()
            .map(|c| c.to_string())
            .collect();
    }
    v
}

/// Every top-level node: the schema's (experiment, host, slurm) and each kind's.
pub fn top_nodes() -> Vec<NodeSpec> {
    let mut v = crate::model::schema::TOP.to_vec();
    v.extend(all().iter().map(|k| k.top));
    v
}

/// Every diagnostic code: the stages' and each kind's.
pub fn all_codes() -> Vec<crate::model::diag::Code> {
    let mut v = crate::model::diag::Code::ALL.to_vec();
    for k in all() {
        v.extend_from_slice(k.codes);
    }
    v
}

/// An experiment read back from data (a journal header's `model`) with each bench's kind's own
/// id and run-id naming, as the decoder gives them; Err names a kind not registered here.
pub fn restore(exp: &mut crate::model::Experiment) -> Result<(), String> {
    for b in &mut exp.benches {
        let spec = of(b.kind);
        if spec.id != b.kind {
            return Err(format!("the benchmark kind `{}` is not known", b.kind.0));
        }
        b.kind = spec.id;
        b.naming = spec.naming();
    }
    Ok(())
}

/// The language of an experiment's report: its `language`, else what its first bench's kind
/// asks for (English without a bench).
pub fn language(exp: &crate::model::Experiment) -> crate::util::lang::Lang {
    exp.language
        .or_else(|| exp.benches.first().map(|b| of(b.kind).default_language()))
        .unwrap_or(crate::util::lang::Lang::En)
}

/// The kind of a bench.
pub fn of(id: KindId) -> &'static KindSpec {
    if let Some(k) = ALL.iter().copied().find(|k| k.id == id) {
        return k;
    }
    all()
        .into_iter()
        .find(|k| k.id == id)
        .unwrap_or(&bench::SPEC)
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_kind_is_known_by_its_node_name_and_found_by_it() {
        for k in super::ALL {
            assert_eq!(k.id.0, k.node);
            assert_eq!(super::of(k.id).node, k.node);
        }
    }
}
