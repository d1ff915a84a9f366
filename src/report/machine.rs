//! The report's machine section: each host's machine as preflight recorded it (the journal's
//! `machine` events), and the points measured under noise (a foreign process on their GPU,
//! throttling).

use std::fmt::Write;
use std::path::Path;

use crate::kind_api::doc::{Doc, Text};
use crate::results::event::RunEvent;
use crate::results::machine::{self, Machine};
use crate::util::fmt::html_text as esc;
use crate::util::lang::Lang;

/// The machines of a result directory, the last record of each host (a resumed run probes
/// again); empty for a run older than the records.
pub fn machines_of(dir: &Path) -> Vec<Machine> {
    let journal = crate::results::journal::shared(&dir.join(crate::results::JOURNAL));
    let events: Vec<&RunEvent> = journal.0.iter().map(|(_, e)| e).collect();
    // the runs into the directory (each from its header) that measured a point: a resume that
    // ran nothing probed a machine no number was measured on
    let mut runs: Vec<(Vec<&Machine>, bool)> = vec![(Vec::new(), false)];
    for e in &events {
        match e {
            RunEvent::Header(_) => runs.push((Vec::new(), false)),
            RunEvent::Machine(m) => runs.last_mut().map_or((), |r| r.0.push(m)),
            RunEvent::Point(p) if p.status.as_deref() != Some("skipped") => {
                runs.last_mut().map_or((), |r| r.1 = true)
            }
            _ => {}
        }
    }
    let measured = runs.iter().any(|r| r.1);
    let mut v: Vec<Machine> = Vec::new();
    for m in runs
        .iter()
        .filter(|r| r.1 || !measured)
        .flat_map(|r| r.0.iter())
    {
        {
            // the last record of each (host, node); a record of no node (an array's host at
            // preflight, or an older run's) gives way to one probed on a node
            v.retain(|x| {
                x.host != m.host || (x.node != m.node && (x.node.is_some() || m.node.is_none()))
            });
            v.push((*m).clone());
        }
    }
    v
}

/// A machine's label: its host, and for an array task's record the node and task.
fn label(m: &Machine, l: Lang) -> String {
    match (&m.task, &m.node) {
        (Some(t), Some(n)) => l.t(
            format!("（节点 `{n}`，任务 {t}）"),
            format!(" (node `{n}`, task {t})"),
        ),
        (Some(t), None) => l.t(format!("（任务 {t}）"), format!(" (task {t})")),
        _ => String::new(),
    }
}

/// The points measured under noise: (run id, what, in `l`), the last outcome of each. A
/// point recorded without its notes as data (an older run) has them in English.
pub fn noisy_points(dir: &Path, l: Lang) -> Vec<(String, Vec<String>)> {
    // run id → (when its last outcome came, what disturbed it then)
    let mut last: std::collections::HashMap<String, (usize, Option<Vec<String>>)> =
        Default::default();
    for (seq, (_, e)) in crate::results::journal::shared(&dir.join(crate::results::JOURNAL))
        .0
        .iter()
        .enumerate()
    {
        if let RunEvent::Point(p) = e {
            let Some(id) = &p.run_id else { continue };
            let mut said_now = None;
            if let Some(n) = p.noise.as_ref().filter(|n| !n.is_empty()) {
                let data = p
                    .noise_of
                    .as_ref()
                    .filter(|d| d.iter().map(|x| x.render(Lang::En)).collect::<Vec<_>>() == *n);
                let said = match data {
                    Some(d) => d.iter().map(|x| x.render(l)).collect(),
                    None => n.clone(),
                };
                said_now = Some(said);
            }
            last.insert(id.clone(), (seq, said_now));
        }
    }
    let mut v: Vec<(usize, String, Vec<String>)> = last
        .into_iter()
        .filter_map(|(id, (seq, said))| Some((seq, id, said?)))
        .collect();
    v.sort_by_key(|(seq, _, _)| *seq);
    v.into_iter().map(|(_, id, said)| (id, said)).collect()
}

/// The machine section of summary.md (a level-3 heading inside the workload section; nothing
/// when the run recorded no machine).
pub fn doc(dir: &Path, l: Lang) -> Doc {
    let mut d = Doc::default();
    let machines = machines_of(dir);
    if machines.is_empty() {
        return d;
    }
    d.h3(l.t(
        "机器（machine，preflight 记录）",
        "Machine (recorded at preflight)",
    ));
    for m in &machines {
        d.list(
            Some(
                Text::plain(l.t("主机 ", "host "))
                    .and_code(&m.host)
                    .and(label(m, l)),
            ),
            machine::lines_in(m, l)
                .into_iter()
                .map(Text::plain)
                .collect(),
        );
    }
    let noisy = noisy_points(dir, l);
    d.list_of(
        l.t(
            format!("⚠ 测量时有干扰的点（{} 个）", noisy.len()),
            format!("⚠ Points measured under noise ({})", noisy.len()),
        ),
        noisy
            .iter()
            .map(|(id, n)| Text::code(id).and(format!("{}{}", l.t("：", ": "), n.join(l.semi()))))
            .collect(),
    );
    d
}

/// The machine part of report.html's provenance, in the report's language.
pub fn html(dir: &Path, lang: Lang) -> String {
    let machines = machines_of(dir);
    let mut o = String::new();
    if machines.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "<h3>{}</h3>",
        lang.t("机器（preflight 记录）", "Machine")
    );
    for m in &machines {
        let _ = writeln!(
            o,
            "<p><strong>{}<code>{}</code>{}</strong></p>\n<ul>",
            lang.t("主机 ", "host "),
            esc(&m.host),
            esc(&label(m, lang))
        );
        for l in machine::lines_in(m, lang) {
            let _ = writeln!(o, "<li>{}</li>", esc(&l));
        }
        o.push_str("</ul>\n");
    }
    let noisy = noisy_points(dir, lang);
    if !noisy.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"bad\">{}</p>\n<ul>",
            lang.t(
                format!("⚠ 测量时有干扰的点（{} 个）：", noisy.len()),
                format!("⚠ {} point(s) measured under noise:", noisy.len())
            )
        );
        for (id, n) in &noisy {
            let _ = writeln!(
                o,
                "<li><code>{}</code>{}{}</li>",
                esc(id),
                lang.t("：", ": "),
                esc(&n.join(lang.semi()))
            );
        }
        o.push_str("</ul>\n");
    }
    o
}
