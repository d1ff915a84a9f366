//! CONTRIBUTING.md's "Adding a benchmark kind", kept honest: a kind defined here, in a test —
//! its vocabulary, plan, collector, metric and headline — registered with `kinds::register`, is
//! decoded, checked, planned, run with real processes and reported like a built-in one, and no
//! file of `src/` names it.

mod common;

use std::path::Path;

use common::csv_by_name as rows;

use expr::kind_api::data::{BenchResults, Measure, Metric};
use expr::kind_api::doc::{Doc, Table};
use expr::kind_api::kind::Kind;
use expr::kind_api::step::{Ctx, KindPlan, Phase, PlanPoint, Step};
use expr::kinds::KindSpec;
use expr::model::diag::Diags;
use expr::model::expand::Point;
use expr::model::schema::{f, node, Args, Field, Ty};
use expr::model::{Bench, Experiment, KindId};
use expr::results::collect::PointDir;

/// `tally NAME { words N }`: each point writes `tally: <words × 10>` into its output directory;
/// the collector reads it back.
struct Tally;

const SETTINGS: &[Field] = &[f(
    "words",
    Ty::Int(1, 1000),
    Some("2"),
    "how many words each point tallies",
    "words 3",
)];

static TALLY: KindSpec = KindSpec {
    id: KindId("tally"),
    behaviour: &Tally,
    node: "tally",
    top: node(
        "tally",
        Args::One(f("name", Ty::Str, None, "benchmark name", "t")),
        &[],
        "A kind a test defines: it tallies words.",
        "tally t {\n    words 3\n}",
    ),
    settings: SETTINGS,
    settings_doc: "words: how many words each point tallies.",
    children: &[],
    workload: &[],
    lane_forbidden: &[],
    default_repeat: 1,
    starter: "tally t {\n    words 3\n}\n",
    codes: &[],
    when_written: &[],
};

impl Kind for Tally {
    fn default_lanes(&self, bench: &Bench) -> Vec<String> {
        vec![bench.name.clone()]
    }

    fn validate(&self, _exp: &Experiment, _bench: &Bench, _diags: &mut Diags) {}

    fn plan(&self, ctx: &Ctx, bench: &Bench, points: &[&Point]) -> Result<KindPlan, String> {
        let host = ctx.exp.hosts.first().ok_or("no host")?;
        let mut plan = KindPlan::default();
        for p in points {
            let out = ctx.out_path(host, &format!("outputs/{}", p.run_id));
            let mut s = Step::new(
                format!("tally-{}", p.run_id),
                Phase::Launch,
                host,
                &bench.loc,
            );
            s.argv = vec![
                "bash".into(),
                "-c".into(),
                "mkdir -p \"$1\" && echo \"tally: $(( $2 * 10 ))\" > \"$1/tally.txt\"".into(),
                "tally".into(),
                out,
                p.int("words").to_string(),
            ];
            plan.points.push(vec![s]);
            plan.ranks.push(None);
        }
        Ok(plan)
    }

    fn collect(&self, at: &PointDir, _bench: &Bench) -> Result<Measure, String> {
        let file = at.out().join("tally.txt");
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
        let (n, line) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.starts_with("tally: "))
            .ok_or_else(|| format!("{}: no `tally:` line", file.display()))?;
        let value: f64 = line["tally: ".len()..]
            .trim()
            .parse()
            .map_err(|e| format!("{}:{}: {e}", file.display(), n + 1))?;
        Ok(Measure::Metric {
            name: "tally".into(),
            unit: None,
            value,
            samples: 1,
            files: vec![format!("{}:{}", file.display(), n + 1)],
            lines: None,
            timing: None,
        })
    }

    fn metrics(&self, _bench: &Bench, measure: &Measure) -> Vec<Metric> {
        match measure {
            Measure::Metric { value, files, .. } => vec![Metric::new(
                "tally",
                "words",
                Some(true),
                *value,
                files.first().map(String::as_str).unwrap_or(""),
            )],
            _ => Vec::new(),
        }
    }

    fn headline(&self, _bench: &Bench) -> (String, String) {
        ("tally".into(), "words".into())
    }

    fn manifest(
        &self,
        _exp: &Experiment,
        _bench: &Bench,
        _p: &PlanPoint,
        _output: &str,
    ) -> Vec<(String, String)> {
        Vec::new()
    }

    fn sections(&self, d: &mut Doc, r: &BenchResults<'_>) {
        let BenchResults { bench, groups, .. } = *r;
        d.h2(format!("Tallies of {}", bench.name));
        let mut t = Table::new(["words", "tally"]);
        for g in groups {
            let words = g.axes.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>();
            let mean = g.mean.map(|m| format!("{m}")).unwrap_or_else(|| "—".into());
            t.row([words.join(","), mean]);
        }
        d.table(t);
    }
}

#[test]
fn a_kind_defined_in_a_test_is_checked_planned_run_and_reported() {
    expr::kinds::register(&TALLY).unwrap();
    // registering it again is fine; another kind of its name is not
    expr::kinds::register(&TALLY).unwrap();
    static CLASH: KindSpec = KindSpec {
        id: KindId("bench"),
        ..TALLY
    };
    let e = expr::kinds::register(&CLASH).unwrap_err();
    assert!(e.contains("`bench`"), "{e}");

    let tmp = tempfile::tempdir().unwrap();
    let kdl =
        "experiment t\nhost local repo=\".\"\ntally words {\n    words 3\n    sweep words 1 4\n}\n";
    // check: the kind's setting is known, a misspelt one is located
    let bad = expr::parse::load::load_str(
        "e.kdl",
        &kdl.replace("words 3", "wrds 3"),
        &Default::default(),
    );
    assert!(bad.has_errors());
    let shown = expr::model::diag::render(&bad.diags, false);
    assert!(
        shown.contains("wrds") && shown.contains("e.kdl:4:5"),
        "{shown}"
    );
    let loaded = expr::parse::load::load_str("e.kdl", kdl, &Default::default());
    assert!(
        !loaded.has_errors(),
        "{}",
        expr::model::diag::render(&loaded.diags, false)
    );
    let mut exp = loaded.experiment.unwrap();
    for h in &mut exp.hosts {
        h.repo = tmp.path().display().to_string();
    }
    // the schema tables document it
    assert!(expr::kinds::top_nodes().iter().any(|n| n.name == "tally"));

    // plan: one step per point, its words from the sweep
    let filter = expr::parse::overrides::filter(&exp, &[]).unwrap();
    let out = tmp.path().join("out").display().to_string();
    let plan = expr::plan::plan(&exp, "e.kdl", &filter, Some(&out), chrono::Local::now()).unwrap();
    assert_eq!(plan.points.len(), 2);
    let text = expr::plan::render::text(&plan);
    assert!(
        text.contains("[launch] $ cd ") && text.contains("/outputs/words_words4_r0 4\n"),
        "{text}"
    );

    // run, with real processes, and the report at its end
    let runner = expr::exec::run::runner::Runner::new(
        &exp,
        &plan,
        expr::exec::state::options::Options::default(),
    )
    .unwrap();
    let mut at_end = expr::report::AtEnd::default();
    let ran = runner.run(&mut at_end);
    assert_eq!(ran.code, 0);
    let dir = Path::new(&out);
    // each point's number read from its file and line: 1 × 10 and 4 × 10
    let m = rows(&dir.join("metrics.csv"));
    let mut got: Vec<(String, String)> = m
        .iter()
        .filter(|r| r["metric"] == "tally")
        .map(|r| (r["run_id"].clone(), r["value"].clone()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            ("words_words1_r0".to_string(), "10".to_string()),
            ("words_words4_r0".to_string(), "40".to_string())
        ],
        "{m:?}"
    );
    assert!(
        m.iter()
            .filter(|r| r["metric"] == "tally")
            .all(|r| r["source"].ends_with("tally.txt:1") && r["direction"] == "higher"),
        "{m:?}"
    );
    // manifest.csv: the core columns and one per sweep axis
    let man = rows(&dir.join("manifest.csv"));
    assert!(man.iter().all(|r| r["status"] == "ok"), "{man:?}");
    assert_eq!(man[0]["words"], "1");
    // the report names the kind's headline
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("## Tallies of words") && summary.contains("| 4 | 40 |"),
        "{summary}"
    );
    assert!(dir.join("report.html").is_file());
}
