//! dataset-rt rules.

use super::spec::code;
use crate::kinds::ranks::RankNode;
use crate::model::diag::{Code, Diag, Diags};
use crate::model::expand::Point;
use crate::model::*;

pub fn nodes(bench: &Bench) -> Vec<RankNode> {
    crate::kinds::ranks::rank_nodes(bench)
}

pub fn validate(bench: &Bench, diags: &mut Diags) {
    let n = nodes(bench);
    crate::kinds::ranks::gpus_oversubscribed(&n, diags);
    if n.is_empty() {
        diags.push(
            Diag::error(Code::MissingValue, format!("`{}` declares no `node`", bench.name))
                .at(&bench.loc.src, bench.loc.span)
                .help("add `node host=local nproc-per-node=1` (one per host; ranks follow declaration order)"),
        );
    }
    if bench.str("launcher") == "self" && n.len() > 1 {
        diags.push(
            Diag::error(
                Code::InvalidValue,
                format!(
                    "{} nodes are declared but the launcher is `self` (one host)",
                    n.len()
                ),
            )
            .at(&n[1].loc.src, n[1].loc.span)
            .help("add `launcher \"torchrun\"`: one torch.distributed.run per host"),
        );
    }
    if bench.str("launcher") == "torchrun" {
        if let Some(r) = bench.settings.get("ranks").and_then(|p| p.loc.as_ref()) {
            diags.push(
                Diag::error(code::DRT_RANKS_EXTERNAL, "`ranks` is set under the external torchrun launcher")
                    .at(&r.src, r.span)
                    .help("remove `ranks`: the module takes WORLD_SIZE from the launcher; set `nproc-per-node` on each `node`"),
            );
        }
        for lane in &bench.lanes {
            if let Some(l) = lane.overrides.get("ranks").and_then(|p| p.loc.as_ref()) {
                diags.push(
                    Diag::error(
                        code::DRT_RANKS_EXTERNAL,
                        "`ranks` is set under the external torchrun launcher",
                    )
                    .at(&l.src, l.span)
                    .help("remove `ranks=`; the launcher decides the world size"),
                );
            }
        }
        for a in bench.sweep.all_axes() {
            if a.name == "ranks" {
                diags.push(
                    Diag::error(code::DRT_RANKS_EXTERNAL, "`ranks` is swept under the external torchrun launcher")
                        .at(&a.loc.src, a.loc.span)
                        .help("sweep `nproc-per-node` by declaring separate benches, or use `launcher \"self\"` on one host"),
                );
            }
        }
    }
}

pub fn validate_point(exp: &Experiment, bench: &Bench, p: &Point, diags: &mut Diags) {
    // the self launcher starts `ranks` ranks; a node's nproc-per-node would be ignored
    if p.str("launcher") == "self" {
        if let Some(n) = nodes(bench).first() {
            let ranks = p.int("ranks");
            if n.nproc_per_node > 1 && n.nproc_per_node != ranks {
                diags.push(
                    Diag::error(
                        Code::InvalidValue,
                        format!(
                            "`node` asks for {} ranks, but the self launcher starts `ranks` = {ranks}",
                            n.nproc_per_node
                        ),
                    )
                    .at(&n.loc.src, n.loc.span)
                    .label("ignored by the self launcher")
                    .help(format!(
                        "write `ranks {}` (or sweep `ranks`), or `launcher \"torchrun\"` to start nproc-per-node ranks per node",
                        n.nproc_per_node
                    )),
                );
            }
        }
    }
    let at = |name: &str| -> Loc {
        p.param(name)
            .and_then(|s| s.loc.clone())
            .unwrap_or_else(|| bench.loc.clone())
    };
    let mut push = |code: Code, name: &str, msg: String, help: &str| {
        let l = at(name);
        diags.push(Diag::error(code, msg).at(&l.src, l.span).help(help));
    };
    let f = p.int("input-features");
    if f <= 0 || f % 32 != 0 {
        push(
            code::DRT_INPUT_FEATURES,
            "input-features",
            format!("input-features {f} is not a positive multiple of 32"),
            "use 32, 64, …, 1024",
        );
    }
    let b = p.int("payload-bytes");
    if b < 16 {
        push(
            code::DRT_PAYLOAD,
            "payload-bytes",
            format!("payload-bytes {b} is below 16"),
            "use payload-bytes ≥ 16",
        );
    }
    // `samples_per_epoch: int | None = Field(gt=0, le=1 << 53)` in the module's config
    if let Some(n) = p.get("samples-per-epoch").and_then(Val::as_int) {
        if n > 1 << 53 {
            push(
                Code::InvalidValue,
                "samples-per-epoch",
                format!("samples-per-epoch {n} is above 2^53 (9007199254740992)"),
                "dataset_rt refuses it before launch; it counts samples across all ranks",
            );
        }
    }
    // `worker_timeout: float = Field(gt=0, allow_inf_nan=False)` in the module's config
    if let Some(w) = p.get("worker-timeout").and_then(Val::as_f64) {
        if !(w.is_finite() && w > 0.0) {
            push(
                Code::InvalidValue,
                "worker-timeout",
                format!("worker-timeout {w} is not a positive, finite number of seconds"),
                "dataset_rt refuses it before launch; use e.g. `worker-timeout 30` or `2.5`",
            );
        }
    }
    if p.str("runner").split_whitespace().next().is_none() {
        push(
            Code::InvalidValue,
            "runner",
            "runner is empty: there is no command to run the module with".into(),
            "give the command that runs Python in the prepared environment, e.g. `runner \"uv run --python 3.11 --extra benchmark python\"` or `runner \"python3\"`",
        );
    }
    if let Some(why) = p
        .get("cache-paths")
        .and_then(|v| cache_paths_problem(&v.to_string()))
    {
        push(
            Code::InvalidValue,
            "cache-paths",
            format!("cache-paths {why}"),
            "write a JSON list of directories, e.g. `cache-paths \"[\\\"/data/cache-a\\\",\\\"/data/cache-b\\\"]\"` (dataset_rt reads `--cache-paths` as JSON)",
        );
    }
    if p.str("device") == "cuda" && p.int("num-workers") > 0 && p.str("worker-context") == "fork" {
        push(
            code::DRT_FORK_CUDA,
            "worker-context",
            "CUDA with fork loader workers is rejected by dataset_rt".into(),
            "use `worker-context \"spawn\"` (the default) or \"forkserver\"",
        );
    }
    if p.str("device") == "cuda" {
        let ranks = if p.str("launcher") == "self" {
            p.int("ranks")
        } else {
            0
        };
        for n in nodes(bench) {
            let want = if ranks > 0 { ranks } else { n.nproc_per_node };
            if let Some(g) = exp.host(&n.host).and_then(|h| h.gpus) {
                if n.gpu + want > g {
                    let l = at("ranks");
                    diags.push(
                        Diag::error(
                            Code::GpuOutOfRange,
                            format!("{want} CUDA ranks exceed the {g} GPUs of `{}`", n.host),
                        )
                        .at(&l.src, l.span)
                        .help(format!("keep ranks ≤ {g}")),
                    );
                }
            }
        }
    }
}

/// Why a `cache-paths` value is not what dataset_rt's `--cache-paths` takes (a JSON list of
/// directory paths: pydantic-settings reads list values as JSON), or `None` where it is.
/// A template is judged once rendered, by the module itself.
pub fn cache_paths_problem(v: &str) -> Option<String> {
    if v.contains("{{") {
        return None;
    }
    let json: serde_json::Value = match serde_json::from_str(v) {
        Ok(j) => j,
        Err(e) => return Some(format!("is not JSON ({e})")),
    };
    let Some(list) = json.as_array() else {
        return Some(format!(
            "is JSON but not a list: `{}`",
            crate::util::markup::one_line(v)
        ));
    };
    if list.is_empty() {
        return Some("is an empty list: give the cache directories, or leave `cache-paths` out for synthetic caches".into());
    }
    for (i, e) in list.iter().enumerate() {
        match e.as_str() {
            Some(s) if !s.trim().is_empty() => {}
            Some(_) => return Some(format!("has an empty path (item {})", i + 1)),
            None => return Some(format!("item {} is not a path in quotes: `{e}`", i + 1)),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn cache_paths_are_a_json_list_of_paths() {
        use super::cache_paths_problem as p;
        assert_eq!(p(r#"["/data/cache-a","/data/cache-b"]"#), None);
        assert_eq!(p(r#"["{{ hosts.a.ip }}"]"#), None);
        assert!(
            p("/data/cache-a").unwrap().starts_with("is not JSON"),
            "{:?}",
            p("/data/cache-a")
        );
        assert!(p(r#"["/a","/b""#).unwrap().starts_with("is not JSON"));
        assert!(p(r#""/data/cache-a""#).unwrap().contains("not a list"));
        assert!(p("[]").unwrap().contains("empty list"));
        assert_eq!(p(r#"["/a",""]"#).unwrap(), "has an empty path (item 2)");
        assert_eq!(
            p(r#"["/a",3]"#).unwrap(),
            "item 2 is not a path in quotes: `3`"
        );
    }
}
