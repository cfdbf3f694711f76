//! What an endpoint may be registered with, rule by rule: the URL's length, form, scheme,
//! credentials, fragment and host (with the SSRF guard's address rules), and the event
//! types subscribed to.

use super::*;

const KNOWN: &[&str] = &[
    "document.approved",
    "document.rejected",
    "document.submitted",
];

fn none() -> AllowedRanges {
    AllowedRanges::default()
}

fn url_ok(text: &str) -> Url {
    check_url(text, true, &none()).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn url_err(text: &str) -> String {
    check_url(text, true, &none()).expect_err(text)
}

fn types(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn an_https_url_with_a_public_host_is_accepted() {
    let url = url_ok("https://hooks.example.com:8443/kh/review?tenant=7");
    assert_eq!(url.host_str(), Some("hooks.example.com"));
    assert_eq!(url.port(), Some(8443));
    url_ok("https://8.8.8.8/hook");
    url_ok("https://[2606:4700:4700::1111]/hook");
}

#[test]
fn a_relative_or_unparsable_url_is_refused() {
    for bad in [
        "/hooks",
        "hooks.example.com/x",
        "",
        "https://",
        "https://exa mple.com/",
    ] {
        let err = url_err(bad);
        assert!(
            err.starts_with("the URL is not an absolute URL"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn a_url_too_long_is_refused() {
    let base = "https://hooks.example.com/";
    let fits = format!("{base}{}", "a".repeat(MAX_URL_LEN - base.len()));
    url_ok(&fits);
    let err = url_err(&format!("{fits}a"));
    assert_eq!(err, "the URL is 2049 bytes long: at most 2048 are allowed");
}

#[test]
fn http_is_refused_when_https_only() {
    let err = url_err("http://hooks.example.com/");
    assert!(err.contains("must use https"), "{err}");
}

#[test]
fn http_is_accepted_when_allowed() {
    let url = check_url("http://hooks.example.com/", false, &none()).unwrap();
    assert_eq!(url.scheme(), "http");
}

#[test]
fn other_schemes_are_refused() {
    for bad in [
        "ftp://hooks.example.com/",
        "file:///etc/passwd",
        "gopher://x.example/",
    ] {
        let err = url_err(bad);
        assert!(err.contains("it must be https"), "{bad}: {err}");
        let err = check_url(bad, false, &none()).unwrap_err();
        assert!(err.contains("it must be https or http"), "{bad}: {err}");
    }
}

#[test]
fn credentials_are_refused() {
    for bad in [
        "https://user@hooks.example.com/",
        "https://user:pw@hooks.example.com/",
        "https://:pw@hooks.example.com/",
    ] {
        assert_eq!(
            url_err(bad),
            "the URL may not carry a user name or password",
            "{bad}"
        );
    }
}

#[test]
fn a_fragment_is_refused() {
    assert_eq!(
        url_err("https://hooks.example.com/x#part"),
        "the URL may not have a fragment (a # part)"
    );
    assert!(check_url("https://hooks.example.com/x#", true, &none()).is_err());
}

#[test]
fn localhost_is_refused_by_name() {
    for bad in [
        "https://localhost/",
        "https://LOCALHOST:8080/",
        "https://localhost./",
        "https://api.localhost/",
        "https://a.b.Localhost/",
    ] {
        let err = url_err(bad);
        assert!(
            err.contains("may not reach the service's own machine"),
            "{bad}: {err}"
        );
    }
    url_ok("https://localhost.example.com/");
    url_ok("https://notlocalhost/");
}

#[test]
fn an_ip_literal_is_judged_by_the_address_rules() {
    assert_eq!(
        url_err("https://127.0.0.1/"),
        "the URL's address is loopback: webhooks may not reach inside the service's network"
    );
    assert!(url_err("https://10.1.2.3/").contains("is private"));
    assert!(url_err("https://169.254.169.254/latest").contains("is link-local"));
    assert!(url_err("https://[::1]/").contains("is loopback"));
    assert!(url_err("https://[::ffff:127.0.0.1]/").contains("is loopback"));
    assert!(url_err("https://[fd00::1]/").contains("is unique-local"));
    assert!(url_err("https://0.0.0.0/").contains("is unspecified"));
}

#[test]
fn ip_literals_in_odd_notations_are_judged_too() {
    // WHATWG URL parsing reads these as 127.0.0.1.
    for bad in [
        "https://127.1/",
        "https://0x7f000001/",
        "https://2130706433/",
    ] {
        assert!(url_err(bad).contains("is loopback"), "{bad}");
    }
}

#[test]
fn an_allowed_range_opens_an_ip_literal() {
    let allowed = AllowedRanges::parse(&["10.20.0.0/16".to_string()]).unwrap();
    assert!(check_url("https://10.20.1.1/hook", true, &allowed).is_ok());
    assert!(check_url("https://10.21.1.1/hook", true, &allowed).is_err());
}

#[test]
fn event_types_come_back_sorted_without_repeats() {
    let got = check_event_types(
        &types(&[
            "document.submitted",
            "document.approved",
            "document.submitted",
        ]),
        KNOWN,
    );
    assert_eq!(
        got.unwrap(),
        types(&["document.approved", "document.submitted"])
    );
}

#[test]
fn no_event_type_is_refused() {
    let err = check_event_types(&[], KNOWN).unwrap_err();
    assert!(
        err.contains("at least one") && err.contains("GET /asyncapi.json"),
        "{err}"
    );
}

#[test]
fn too_many_event_types_are_refused() {
    let many = vec!["document.approved".to_string(); MAX_EVENT_TYPES + 1];
    let err = check_event_types(&many, KNOWN).unwrap_err();
    assert_eq!(err, "33 event types are named: at most 32 are allowed");
    let most = vec!["document.approved".to_string(); MAX_EVENT_TYPES];
    assert!(check_event_types(&most, KNOWN).is_ok());
}

#[test]
fn an_unknown_event_type_is_named() {
    let err =
        check_event_types(&types(&["document.approved", "document.eaten"]), KNOWN).unwrap_err();
    assert_eq!(
        err,
        "\"document.eaten\" is not an event type: see GET /asyncapi.json for the list"
    );
    assert!(check_event_types(&types(&["Document.Approved"]), KNOWN).is_err());
}
