//! `profile "nsys"|"ncu"` of a bench: the measured steps of the points it matches run under
//! NVIDIA's profiler, writing their capture into the point's output directory, and a cleanup
//! step after them writes the kernel summary as CSV (`nsys stats --report cuda_gpu_kern_sum
//! --format csv`, or `ncu -i … --csv --print-summary per-kernel`) that the report reads.

use crate::model::{Bench, Profile};
use crate::util::shell::quote;

use crate::kind_api::step::{Ctx, Phase, Step};

/// The capture's path stem of a step (`outputs/<run id>/profile-<step id>` on its host).
fn stem(ctx: &Ctx, host: &crate::model::Host, run_id: &str, step: &str) -> String {
    ctx.out_path(host, &format!("outputs/{run_id}/profile-{step}"))
}

/// The file names (in the point's output directory) of a step's capture and its summary CSV.
pub fn files(tool: &str, step: &str) -> (String, String) {
    match tool {
        "ncu" => (
            format!("profile-{step}.ncu-rep"),
            format!("profile-{step}_summary.csv"),
        ),
        _ => (
            format!("profile-{step}.nsys-rep"),
            format!("profile-{step}_cuda_gpu_kern_sum.csv"),
        ),
    }
}

/// The profiler a planned step runs under (as [`add`] wrapped it), if any.
pub fn tool_of(s: &Step) -> Option<&'static str> {
    let line = s.shell.as_deref()?;
    if line.starts_with("nsys profile ") {
        Some("nsys")
    } else if line.starts_with("ncu -o ") {
        Some("ncu")
    } else {
        None
    }
}

/// The profile of a bench that matches a point, if any (the first written).
pub fn of<'a>(bench: &'a Bench, lane: &str, repeat: i64) -> Option<&'a Profile> {
    bench.profiles.iter().find(|p| p.matches(lane, repeat))
}

/// Wrap the point's launch steps in the profiler and add their summary steps after its last
/// launch step.
pub fn add(ctx: &Ctx, prof: &Profile, run_id: &str, steps: &mut Vec<Step>) {
    let mut summaries = Vec::new();
    for s in steps
        .iter_mut()
        .filter(|s| s.phase == Phase::Launch && !s.background)
    {
        let Some(host) = ctx.exp.host(&s.host) else {
            continue;
        };
        let line = match &s.shell {
            Some(l) => l.clone(),
            None => s
                .argv
                .iter()
                .map(|a| quote(a))
                .collect::<Vec<_>>()
                .join(" "),
        };
        let out = stem(ctx, host, run_id, &s.id);
        let args: String = prof.args.iter().map(|a| format!(" {}", quote(a))).collect();
        let (wrapped, summary) = match prof.tool.as_str() {
            "ncu" => (
                format!(
                    "ncu -o {} -f{args} bash -c {}",
                    quote(&out),
                    quote(&line)
                ),
                format!(
                    "ncu -i {} --csv --print-summary per-kernel > {}",
                    quote(&format!("{out}.ncu-rep")),
                    quote(&format!("{out}_summary.csv"))
                ),
            ),
            _ => (
                format!(
                    "nsys profile -o {} --force-overwrite=true{args} -- bash -c {}",
                    quote(&out),
                    quote(&line)
                ),
                format!(
                    "nsys stats --report cuda_gpu_kern_sum --format csv --force-export=true --output {} {}",
                    quote(&out),
                    quote(&format!("{out}.nsys-rep"))
                ),
            ),
        };
        s.shell = Some(wrapped);
        s.argv.clear();
        s.direct = false;
        // the profiler writes its capture as the program ends, inside the step's time
        s.timeout_s = s.timeout_s.saturating_mul(2).saturating_add(300);
        s.extra_mut().note = Some(format!(
            "profiled with {} ({:?}): its numbers are perturbed and {} the statistics",
            prof.tool,
            prof.loc,
            if prof.stats {
                "kept in (`stats=#true`)"
            } else {
                "left out of"
            }
        ));
        let mut st = Step::new(
            format!("profile-stats-{}", s.id),
            Phase::Cleanup,
            host,
            &prof.loc,
        );
        st.cwd = s.cwd.clone();
        st.shell = Some(summary);
        st.timeout_s = 600;
        summaries.push(st);
    }
    let at = steps
        .iter()
        .rposition(|s| s.phase == Phase::Launch)
        .map_or(steps.len(), |i| i + 1);
    for (k, s) in summaries.into_iter().enumerate() {
        steps.insert(at + k, s);
    }
}
