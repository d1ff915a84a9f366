//! A lookup by run id over a list, made on first use: reports of 100k points and each of a
//! run's events ask for a point by its id, which a search would make quadratic.

use std::collections::HashMap;
use std::sync::OnceLock;

/// Run id → its place in a list, built the first time it is asked. A list that changes after
/// a lookup wants a new one (`Default::default()`).
#[derive(Debug, Clone, Default)]
pub struct ById(OnceLock<HashMap<String, usize>>);

impl ById {
    /// The item of `items` whose `id` is `run_id`.
    pub fn get<'a, T>(&self, items: &'a [T], id: fn(&T) -> &str, run_id: &str) -> Option<&'a T> {
        let idx = self.0.get_or_init(|| {
            items
                .iter()
                .enumerate()
                .map(|(i, p)| (id(p).to_string(), i))
                .collect()
        });
        idx.get(run_id).map(|&i| &items[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_id_and_nothing_else() {
        let items = ["a", "b", "c"];
        let by = ById::default();
        assert_eq!(by.get(&items, |s| s, "b"), Some(&"b"));
        assert_eq!(by.get(&items, |s| s, "c"), Some(&"c"));
        assert_eq!(by.get(&items, |s| s, "d"), None);
    }
}
