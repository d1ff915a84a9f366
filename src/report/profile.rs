//! The profiles part of the report (`profile` in a bench): each profiled point's capture, the
//! heaviest kernels of its summary, and that its numbers are left out of the statistics.

use std::path::Path;

use crate::kind_api::data::ReportData;
use crate::kind_api::doc::{Doc, Table, Text};

/// The most kernels listed per profiled step.
const TOP: usize = 10;

/// The profiles section, when a point ran under a profiler.
pub fn doc(data: &ReportData, dir: &Path) -> Doc {
    let mut d = Doc::default();
    let l = data.lang;
    let Some(exp) = &data.exp else { return d };
    let mut any = false;
    for p in &data.points {
        let Some(bench) = exp.benches.iter().find(|b| b.name == p.bench) else {
            continue;
        };
        let Some(prof) = crate::plan::profile::of(bench, &p.lane, p.repeat) else {
            continue;
        };
        if !any {
            d.h2(l.t("剖析（profile）", "Profiles"));
            any = true;
        }
        d.label(format!("{} — {}", p.run_id, prof.tool));
        d.para(match &p.perturbed {
            Some(why) => l.t(
                format!("{why}：该点的数值受剖析器干扰，不计入统计（`stats=#true` 可保留）。"),
                format!("{why}: its numbers are perturbed by the profiler and left out of the statistics (`stats=#true` keeps them)."),
            ),
            None => l.t(
                "在剖析器下运行，按 `stats=#true` 计入统计。".to_string(),
                "Ran under the profiler; kept in the statistics (`stats=#true`).".to_string(),
            ),
        });
        let out = dir.join(crate::results::OUTPUTS).join(&p.run_id);
        let mut steps: Vec<String> = std::fs::read_dir(&out)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter_map(|f| {
                        let stem = f
                            .strip_suffix(".nsys-rep")
                            .or_else(|| f.strip_suffix(".ncu-rep"))?;
                        stem.strip_prefix("profile-").map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        steps.sort();
        if steps.is_empty() {
            d.para(l.t(
                format!("没有剖析文件：{}/{} 下没有 profile-*.nsys-rep/.ncu-rep（剖析器未运行或未写出）。", crate::results::OUTPUTS, p.run_id),
                format!("No capture: {}/{} holds no profile-*.nsys-rep or .ncu-rep (the profiler did not run, or wrote nothing).", crate::results::OUTPUTS, p.run_id),
            ));
            continue;
        }
        for step in steps {
            let (capture, csv) = crate::plan::profile::files(&prof.tool, &step);
            let rel = |f: &str| format!("{}/{}/{f}", crate::results::OUTPUTS, p.run_id);
            let text =
                Text::plain(l.t("剖析文件：", "Capture: ")).and_link(rel(&capture), rel(&capture));
            d.para(text);
            let read = crate::results::collect::read_lossy(&out.join(&csv))
                .and_then(|t| crate::results::profile::summary(&t));
            match read {
                Ok(rows) if !rows.is_empty() => {
                    let mut t = Table::new([
                        l.t("内核", "kernel").to_string(),
                        l.t("总时间 (ms)", "total (ms)").to_string(),
                        l.t("次数", "calls").to_string(),
                        l.t("平均 (µs)", "mean (µs)").to_string(),
                    ]);
                    for (name, total, calls, avg) in rows.iter().take(TOP) {
                        t.row([
                            Text::code(name),
                            Text::plain(format!("{:.3}", total / 1e6)),
                            Text::plain(calls.to_string()),
                            Text::plain(format!("{:.2}", avg / 1e3)),
                        ]);
                    }
                    d.table(t);
                    if rows.len() > TOP {
                        d.para(l.t(
                            format!("（共 {} 个内核，见 {}）", rows.len(), rel(&csv)),
                            format!("({} kernels in all: {})", rows.len(), rel(&csv)),
                        ));
                    }
                }
                Ok(_) => d.para(l.t(
                    format!("{} 中没有内核。", rel(&csv)),
                    format!("{} lists no kernel.", rel(&csv)),
                )),
                Err(e) => d.para(l.t(
                    format!("没有内核表（{}：{e}）。", rel(&csv)),
                    format!("No kernel table ({}: {e}).", rel(&csv)),
                )),
            }
        }
    }
    d
}
