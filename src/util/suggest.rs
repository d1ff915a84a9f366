//! "Did you mean" suggestions for misspelled names.

/// The closest candidate to `name`, if it is close enough to be a likely typo.
pub fn did_you_mean<'a, I>(name: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let lower = name.to_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(&lower, &c.to_lowercase());
        let close = score > 0.8 || strsim::levenshtein(&lower, &c.to_lowercase()) <= 2;
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
            candidates
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
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
        assert_eq!(did_you_mean("stepz", c), Some("steps"));
        assert_eq!(did_you_mean("zzzz", c), None);
    }
}
