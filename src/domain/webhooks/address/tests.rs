//! The address rules range by range: each refused range with its reason, the IPv6 forms
//! that carry an IPv4 address judged by it, public addresses accepted, and the operator's
//! allowed ranges opening what would be refused.

use super::*;

fn none() -> AllowedRanges {
    AllowedRanges::default()
}

fn judge(ip: &str) -> Option<&'static str> {
    refusal(ip.parse().expect("an IP address"), &none())
}

fn allowing(ranges: &[&str]) -> AllowedRanges {
    let owned: Vec<String> = ranges.iter().map(|r| r.to_string()).collect();
    AllowedRanges::parse(&owned).expect("valid ranges")
}

/// Each address is refused for `reason`.
fn refused(reason: &str, ips: &[&str]) {
    for ip in ips {
        assert_eq!(judge(ip), Some(reason), "{ip}");
    }
}

#[test]
fn unspecified_addresses_are_refused() {
    refused("unspecified", &["0.0.0.0", "::"]);
}

#[test]
fn this_network_is_refused() {
    refused("this network", &["0.0.0.1", "0.255.255.255"]);
}

#[test]
fn loopback_is_refused() {
    refused("loopback", &["127.0.0.1", "127.255.255.254", "::1"]);
}

#[test]
fn private_ranges_are_refused_to_their_edges() {
    refused(
        "private",
        &[
            "10.0.0.0",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.0.1",
            "192.168.255.255",
        ],
    );
    assert_eq!(judge("172.15.255.255"), None);
    assert_eq!(judge("172.32.0.0"), None);
    assert_eq!(judge("11.0.0.1"), None);
}

#[test]
fn link_local_is_refused() {
    refused("link-local", &["169.254.169.254", "fe80::1", "febf::1"]);
}

#[test]
fn cgnat_is_refused() {
    refused("CGNAT", &["100.64.0.1", "100.127.255.255"]);
    assert_eq!(judge("100.63.255.255"), None);
    assert_eq!(judge("100.128.0.0"), None);
}

#[test]
fn broadcast_and_multicast_are_refused() {
    refused("broadcast", &["255.255.255.255"]);
    refused(
        "multicast",
        &["224.0.0.1", "239.255.255.250", "ff02::1", "ff0e::fb"],
    );
}

#[test]
fn documentation_and_benchmarking_ranges_are_refused() {
    refused(
        "documentation",
        &[
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "2001:db8::1",
            "3fff::1",
        ],
    );
    refused(
        "benchmarking",
        &["198.18.0.1", "198.19.255.255", "2001:2::1"],
    );
    assert_eq!(judge("198.20.0.1"), None);
}

#[test]
fn reserved_and_ietf_ranges_are_refused() {
    refused("reserved", &["240.0.0.1", "255.255.255.254"]);
    refused("IETF-reserved", &["192.0.0.1", "192.0.0.170"]);
}

#[test]
fn ipv6_local_and_special_ranges_are_refused() {
    refused("unique-local", &["fc00::1", "fd12:3456::1"]);
    refused("site-local", &["fec0::1", "feff::1"]);
    refused(
        "Teredo",
        &["2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2"],
    );
    refused("NAT64", &["64:ff9b:1::1", "64:ff9b:1:ffff::a00:1"]);
    refused("discard-only", &["100::1"]);
}

#[test]
fn ipv6_outside_global_unicast_is_reserved() {
    refused("reserved", &["4000::1", "1000::1", "::ffff:0:7f00:1"]);
}

#[test]
fn ipv4_mapped_and_compatible_addresses_are_judged_by_their_ipv4() {
    assert_eq!(judge("::ffff:127.0.0.1"), Some("loopback"));
    assert_eq!(judge("::ffff:10.1.2.3"), Some("private"));
    assert_eq!(judge("::ffff:169.254.169.254"), Some("link-local"));
    assert_eq!(judge("::127.0.0.1"), Some("loopback"));
    assert_eq!(judge("::10.0.0.1"), Some("private"));
    assert_eq!(judge("::0.0.0.2"), Some("this network"));
    assert_eq!(judge("::ffff:8.8.8.8"), None);
    assert_eq!(judge("::8.8.8.8"), None);
}

#[test]
fn nat64_addresses_are_judged_by_their_last_32_bits() {
    assert_eq!(judge("64:ff9b::7f00:1"), Some("loopback"));
    assert_eq!(judge("64:ff9b::a9fe:a9fe"), Some("link-local"));
    assert_eq!(judge("64:ff9b::808:808"), None, "8.8.8.8 is public");
}

#[test]
fn sixtofour_addresses_are_judged_by_bits_16_to_48() {
    assert_eq!(judge("2002:7f00:1::"), Some("loopback"));
    assert_eq!(judge("2002:c0a8:101::1"), Some("private"));
    assert_eq!(judge("2002:808:808::1"), None, "8.8.8.8 is public");
}

#[test]
fn public_addresses_are_accepted() {
    for ip in [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.215.14",
        "2606:4700:4700::1111",
        "2a00:1450:4001:80b::200e",
    ] {
        assert_eq!(judge(ip), None, "{ip}");
    }
}

#[test]
fn an_allowed_range_opens_what_would_be_refused() {
    let allowed = allowing(&["10.20.0.0/16", "fd00::/8"]);
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    assert_eq!(refusal(ip("10.20.3.4"), &allowed), None);
    assert_eq!(refusal(ip("fd00::5"), &allowed), None);
    assert_eq!(refusal(ip("::ffff:10.20.3.4"), &allowed), None);
    assert_eq!(refusal(ip("64:ff9b::a14:304"), &allowed), None);
    assert_eq!(refusal(ip("10.21.0.1"), &allowed), Some("private"));
    assert_eq!(refusal(ip("127.0.0.1"), &allowed), Some("loopback"));
    assert_eq!(refusal(ip("fc00::1"), &allowed), Some("unique-local"));
}

#[test]
fn allowed_ranges_contain_their_addresses_only() {
    let allowed = allowing(&["10.20.0.0/16", " 192.168.7.9/24 ", "fd00::/8"]);
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    assert!(allowed.contains(ip("10.20.255.255")));
    assert!(allowed.contains(ip("192.168.7.1")), "host bits are dropped");
    assert!(allowed.contains(ip("fdff::1")));
    assert!(!allowed.contains(ip("10.19.0.1")));
    assert!(!allowed.contains(ip("fe00::1")));
    assert!(!none().contains(ip("10.20.0.1")));
    assert!(AllowedRanges::parse(&[]).is_ok());
}

#[test]
fn a_bad_allowed_range_is_named() {
    for bad in [
        "10.20.0.0",
        "10.20.0.0/33",
        "fd00::/129",
        "intranet",
        "10.20.0/16",
        "",
    ] {
        let list = vec!["10.0.0.0/8".to_string(), bad.to_string()];
        let err = AllowedRanges::parse(&list).expect_err(bad);
        assert!(err.contains(&format!("`{bad}`")), "{err}");
    }
}
