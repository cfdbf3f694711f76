//! The SSRF guard's address rules: which IP addresses a webhook delivery may connect to.
//! A receiver is somewhere on the Internet, so every address that is not publicly routable
//! is refused ([`refusal`]): loopback, private, link-local, CGNAT, multicast, the
//! documentation and reserved ranges, and their IPv6 counterparts. An IPv6 address that
//! carries an IPv4 one (IPv4-mapped or -compatible, NAT64, 6to4) is judged by that IPv4
//! address, so no encoding of `127.0.0.1` gets through. The operator may open ranges of
//! their own ([`AllowedRanges`]) for receivers on the premises.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// The ranges the operator opened to webhooks, refused ones among them (receivers on the
/// premises): an address inside one is always accepted.
#[derive(Debug, Clone, Default)]
pub struct AllowedRanges(Vec<IpNet>);

impl AllowedRanges {
    /// The ranges of the setting, each a CIDR like `10.20.0.0/16` or `fd00::/8`; the error
    /// names the first entry that is not one.
    pub fn parse(ranges: &[String]) -> Result<Self, String> {
        ranges
            .iter()
            .map(|r| {
                r.trim().parse::<IpNet>().map(|n| n.trunc()).map_err(|_| {
                    format!(
                        "the allowed range `{r}` is not a CIDR range \
                         (an address, a slash and a prefix length, like 10.20.0.0/16 or fd00::/8)"
                    )
                })
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    /// `ip` lies inside one of the ranges.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(&ip))
    }
}

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)
}

const fn v6(head: [u16; 3], len: u8) -> Ipv6Net {
    let [a, b, c] = head;
    Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, 0, 0, 0, 0, 0), len)
}

/// The IPv4 ranges refused, each with its reason; the first that holds an address names it.
const V4_REFUSED: &[(Ipv4Net, &str)] = &[
    (v4(0, 0, 0, 0, 32), "unspecified"),
    (v4(0, 0, 0, 0, 8), "this network"),
    (v4(127, 0, 0, 0, 8), "loopback"),
    (v4(10, 0, 0, 0, 8), "private"),
    (v4(172, 16, 0, 0, 12), "private"),
    (v4(192, 168, 0, 0, 16), "private"),
    (v4(169, 254, 0, 0, 16), "link-local"),
    (v4(100, 64, 0, 0, 10), "CGNAT"),
    (v4(192, 0, 0, 0, 24), "IETF-reserved"),
    (v4(192, 0, 2, 0, 24), "documentation"),
    (v4(198, 51, 100, 0, 24), "documentation"),
    (v4(203, 0, 113, 0, 24), "documentation"),
    (v4(198, 18, 0, 0, 15), "benchmarking"),
    (v4(224, 0, 0, 0, 4), "multicast"),
    (v4(255, 255, 255, 255, 32), "broadcast"),
    (v4(240, 0, 0, 0, 4), "reserved"),
];

/// The IPv6 ranges refused outright, each with its reason. The forms that carry an IPv4
/// address are judged before these ([`embedded_v4`]).
const V6_REFUSED: &[(Ipv6Net, &str)] = &[
    (v6([0x64, 0xff9b, 1], 48), "NAT64"),
    (v6([0x2001, 0, 0], 32), "Teredo"),
    (v6([0x2001, 2, 0], 48), "benchmarking"),
    (v6([0x2001, 0xdb8, 0], 32), "documentation"),
    (v6([0x3fff, 0, 0], 20), "documentation"),
    (v6([0x100, 0, 0], 64), "discard-only"),
    (v6([0xff00, 0, 0], 8), "multicast"),
    (v6([0xfc00, 0, 0], 7), "unique-local"),
    (v6([0xfe80, 0, 0], 10), "link-local"),
    (v6([0xfec0, 0, 0], 10), "site-local"),
];

/// Global unicast, the only IPv6 space allocated for the Internet: an address outside it
/// (and outside the forms above) is reserved.
const V6_GLOBAL_UNICAST: Ipv6Net = v6([0x2000, 0, 0], 3);

/// `None` when a delivery may connect to `ip`; otherwise why not, in a word or two
/// ("loopback", "private", "link-local", "CGNAT", "unique-local", "multicast",
/// "unspecified", "reserved", "documentation", "NAT64", "Teredo", ...). An address, or the
/// IPv4 address it carries, inside `allowed` is accepted whatever its range.
pub fn refusal(ip: IpAddr, allowed: &AllowedRanges) -> Option<&'static str> {
    if allowed.contains(ip) {
        return None;
    }
    match ip {
        IpAddr::V4(ip) => v4_refusal(ip),
        IpAddr::V6(ip) => match embedded_v4(ip) {
            Some(inner) if allowed.contains(IpAddr::V4(inner)) => None,
            Some(inner) => v4_refusal(inner),
            None => v6_refusal(ip),
        },
    }
}

fn v4_refusal(ip: Ipv4Addr) -> Option<&'static str> {
    V4_REFUSED
        .iter()
        .find(|(net, _)| net.contains(&ip))
        .map(|(_, reason)| *reason)
}

fn v6_refusal(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    let listed = V6_REFUSED.iter().find(|(net, _)| net.contains(&ip));
    match listed {
        Some((_, reason)) => Some(*reason),
        None if !V6_GLOBAL_UNICAST.contains(&ip) => Some("reserved"),
        None => None,
    }
}

/// The IPv4 address `ip` carries, if it is one of the forms that do: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, but not `::` or `::1`), NAT64's
/// well-known prefix (`64:ff9b::/96`, the last 32 bits) or 6to4 (`2002::/16`, bits 16 to 48).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(ip);
    let last = Ipv4Addr::from(bits as u32);
    let s = ip.segments();
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(last),
        [0, 0, 0, 0, 0, 0, _, _] if bits > 1 => Some(last),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(last),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
