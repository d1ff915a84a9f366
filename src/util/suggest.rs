//! "Did you mean" suggestions for misspelled names.

/// Words that mean a value they are not spelt like (`language "cn"` is `zh`, not the nearer
/// `en`; `device "gpu"` is `cuda`, not `cpu`).
const SAME_MEANING: &[(&str, &str)] = &[
    ("cn", "zh"),
    ("chinese", "zh"),
    ("zh-cn", "zh"),
    ("english", "en"),
    ("gpu", "cuda"),
    ("nvidia", "cuda"),
];

/// The closest candidate to `name`, if it is close enough to be a likely typo (or a word that
/// means it, [`SAME_MEANING`]).
pub fn did_you_mean<'a, I>(name: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let lower = name.to_lowercase();
    let candidates: Vec<&'a str> = candidates.into_iter().collect();
    let meant = SAME_MEANING
        .iter()
        .filter(|(w, _)| *w == lower)
        .find_map(|(_, m)| candidates.iter().find(|c| *c == m));
    if let Some(m) = meant {
        return Some(m);
    }
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let c_lower = c.to_lowercase();
        let score = strsim::jaro_winkler(&lower, &c_lower);
        // two edits make any short name another (`zz` was "did you mean `a`?"): at most one
        // edit in three characters, two at the most; two letters swapped are one edit
        // (`cpm` is `cmp`)
        let longest = lower.chars().count().max(c_lower.chars().count());
        let edits = (longest / 3).clamp(1, 2);
        let close = score > 0.8 || strsim::osa_distance(&lower, &c_lower) <= edits;
        if close && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

/// A help sentence: "did you mean `x`?", else every allowed name: "{what} are: `a`, `b`"
/// (`what` names them: "the lanes", "the entries `bench` takes").
pub fn help_for(name: &str, candidates: &[&str], what: &str) -> String {
    match did_you_mean(name, candidates.iter().copied()) {
        Some(s) => format!("did you mean `{s}`?"),
        None if candidates.is_empty() => format!("{what}: none"),
        None => format!(
            "{what} are: {}",
            crate::util::markup::ticked(candidates.iter())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let c = ["batch-size", "embedding-dim", "steps"];
        assert_eq!(did_you_mean("bach-size", c), Some("batch-size"));
        // a short name two edits from another is no typo of it (helper 78)
        assert_eq!(did_you_mean("zz", ["a", "b"]), None);
        assert_eq!(did_you_mean("nn", ["n", "steps"]), Some("n"));
        assert_eq!(did_you_mean("hots", ["host", "bench"]), Some("host"));
        assert_eq!(did_you_mean("cpm", ["cmp", "x"]), Some("cmp"));
        assert_eq!(did_you_mean("stepz", c), Some("steps"));
        assert_eq!(did_you_mean("zzzz", c), None);
    }
}

#[cfg(test)]
mod meaning_tests {
    /// A word that means a value is offered that value, before a nearer spelling (helper 50:
    /// `cn` was offered `en`, `gpu` `cpu`).
    #[test]
    fn a_word_that_means_a_value_is_offered_it() {
        assert_eq!(super::did_you_mean("cn", ["en", "zh"]), Some("zh"));
        assert_eq!(super::did_you_mean("GPU", ["cpu", "cuda"]), Some("cuda"));
        // only where the value is a candidate
        assert_eq!(super::did_you_mean("gpu", ["cpu", "tpu"]), Some("cpu"));
        assert_eq!(super::did_you_mean("mdoe", ["mode", "node"]), Some("mode"));
    }
}
