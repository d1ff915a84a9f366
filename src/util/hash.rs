//! A stable fingerprint of a text.

/// FNV-1a of `text`, 16 hex digits: the same across runs and platforms, enough to notice a
/// changed command or experiment and to name a host's socket (not a cryptographic hash).
pub fn fnv1a(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn fnv1a_of_known_texts() {
        // the FNV-1a 64 reference values
        assert_eq!(super::fnv1a(""), "cbf29ce484222325");
        assert_eq!(super::fnv1a("a"), "af63dc4c8601ec8c");
        assert_eq!(super::fnv1a("foobar"), "85944171f73967e8");
    }
}
