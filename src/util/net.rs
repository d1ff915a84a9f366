//! Network addresses as the hosts of an experiment write them.

use std::net::IpAddr;

/// An address as one machine knows it: every loopback spelling (`localhost`, `127.0.0.2`,
/// `::1`, `::ffff:127.0.0.1`) is `127.0.0.1`, an IP in its canonical form, a name in lower case
/// without its final dot. Names are not looked up (a name and its IP stay two addresses).
pub fn address(ip: &str) -> String {
    let name = ip.trim().trim_start_matches('[').trim_end_matches(']');
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    match name.parse::<IpAddr>() {
        Ok(a) => {
            let a = match a {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(a, IpAddr::V4),
                v4 => v4,
            };
            if a.is_loopback() {
                "127.0.0.1".into()
            } else {
                a.to_string()
            }
        }
        Err(_) if name == "localhost" || name.ends_with(".localhost") => "127.0.0.1".into(),
        Err(_) => name,
    }
}

/// Whether an address is this machine's loopback (any spelling [`address`] folds).
pub fn is_loopback(ip: &str) -> bool {
    address(ip) == "127.0.0.1"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_loopback_spelling_is_one_address_and_an_ip_has_one_form() {
        for a in [
            "127.0.0.1",
            "127.0.0.2",
            "localhost",
            "LocalHost.",
            "::1",
            "[::1]",
            "0:0:0:0:0:0:0:1",
            "::ffff:127.0.0.1",
            "db.localhost",
        ] {
            assert_eq!(address(a), "127.0.0.1", "{a}");
        }
        assert_eq!(address("::ffff:10.0.0.7"), "10.0.0.7");
        assert_eq!(address("2001:DB8::0:1"), "2001:db8::1");
        assert_eq!(address("Node-1.example."), "node-1.example");
        assert_ne!(address("10.0.0.7"), address("10.0.0.8"));
        assert!(["localhost", "127.9.9.9", "::1"]
            .iter()
            .all(|a| is_loopback(a)));
        assert!(!["10.0.0.1", "node-1", "localhost.example"]
            .iter()
            .any(|a| is_loopback(a)));
    }
}
