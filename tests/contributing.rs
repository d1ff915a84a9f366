//! CONTRIBUTING.md's walk-throughs stay true: every `src/…` path it names exists, every trait it
//! names is defined where it says, and every method it lists for the `Kind`, `Format`, `Backend`
//! and `Allocator` traits is one of theirs.

use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn contributing() -> String {
    std::fs::read_to_string(root().join("CONTRIBUTING.md")).unwrap()
}

/// The `code spans` of a text.
fn spans(text: &str) -> Vec<String> {
    text.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

#[test]
fn every_path_it_names_exists() {
    let mut missing = Vec::new();
    for s in spans(&contributing()) {
        let s = s.trim_end_matches(',');
        if s.starts_with("src/") || s.starts_with("tests/") || s.starts_with("schemas/") {
            // `src/kinds/<kind>/` is a pattern, not a path
            if s.contains('<') || s.contains('…') {
                continue;
            }
            if !root().join(s).exists() {
                missing.push(s.to_string());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "CONTRIBUTING.md names paths that do not exist: {missing:?}"
    );
}

/// The methods a trait defines (`fn name` lines inside `pub trait NAME { … }`).
fn trait_methods(file: &str, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let start = text
        .find(&format!("pub trait {name}"))
        .unwrap_or_else(|| panic!("{file} defines no trait {name}"));
    let body = &text[start..];
    let end = body.find("\n}\n").unwrap_or(body.len());
    body[..end]
        .lines()
        .filter_map(|l| l.trim().strip_prefix("fn "))
        .map(|l| l.split(['(', '<']).next().unwrap().to_string())
        .collect()
}

/// The `method` spans of the paragraph (or list item) that names the trait.
fn listed_after(text: &str, marker: &str) -> Vec<String> {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("CONTRIBUTING.md lost `{marker}`"));
    let rest = &text[at + marker.len()..];
    // to the end of the item: a blank line, or a line that starts another item or paragraph
    let end = rest
        .match_indices('\n')
        .map(|(i, _)| i)
        .find(|&i| {
            let next = rest[i + 1..].trim_start_matches(' ');
            next.is_empty()
                || next.starts_with('\n')
                || next.starts_with("- ")
                || next.starts_with(|c: char| c.is_ascii_digit())
        })
        .unwrap_or(rest.len());
    spans(&rest[..end])
        .into_iter()
        .filter(|s| s.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .collect()
}

#[test]
fn every_trait_method_it_lists_is_the_traits() {
    let text = contributing();
    for (marker, file, name, min) in [
        (
            "implementing `kinds::Kind`:",
            "src/kind_api/kind.rs",
            "Kind",
            15,
        ),
        (
            "implement\n  `exec::backend::Backend`",
            "src/exec/backend/mod.rs",
            "Backend",
            4,
        ),
        (
            "implement\n  `exec::allocator::api::Allocator`",
            "src/exec/allocator/api.rs",
            "Allocator",
            5,
        ),
        (
            "implementing `report::format::Format`",
            "src/report/format.rs",
            "Format",
            1,
        ),
    ] {
        let have = trait_methods(file, name);
        let listed = listed_after(&text, marker);
        assert!(listed.len() >= min, "{name}: only {listed:?} listed");
        for m in &listed {
            assert!(
                have.contains(m),
                "CONTRIBUTING.md lists `{m}` for {name}, which has {have:?}"
            );
        }
    }
}

#[test]
fn the_trait_reader_sees_a_missing_method() {
    let listed = listed_after("implementing `X`: `a`, `b`.\n\nmore", "implementing `X`:");
    assert_eq!(listed, vec!["a".to_string(), "b".into()]);
}
