//! Signatures against the Standard Webhooks reference (the vector of its specification,
//! and two more its Python package, `standardwebhooks` 1.3.0, computed), and the secrets'
//! own rules: what parses, and that they are never printed.

use super::*;

const REFERENCE_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A 32-byte key, 0x01 to 0x20.
const COUNTING_SECRET: &str = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";

fn secret(text: &str) -> WebhookSecret {
    WebhookSecret::parse(text).expect("a valid secret")
}

#[test]
fn the_reference_vector_signs_as_the_specification_says() {
    let got = sign(
        &secret(REFERENCE_SECRET),
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        br#"{"test": 2432232314}"#,
    );
    assert_eq!(got, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

#[test]
fn a_header_of_two_secrets_carries_both_signatures_in_order() {
    let (old, new) = (secret(REFERENCE_SECRET), secret(COUNTING_SECRET));
    let body = br#"{"type":"review.approved"}"#;
    let header = signature_header(&[&old, &new], "msg_2", 1700000000, body);
    assert_eq!(
        header,
        "v1,ll82WZoe+Fs++8YkEHS8bYZIRsOyv9EttL1u36x7kpU= \
         v1,eLYf3VMaJxEGQQH2vdHW/8OVJo6apeOOKzZKEvztCTc="
    );
    assert_eq!(
        header.split(' ').filter(|s| s.starts_with("v1,")).count(),
        2
    );
}

#[test]
fn a_header_of_one_secret_is_its_signature() {
    let s = secret(REFERENCE_SECRET);
    assert_eq!(
        signature_header(&[&s], "msg_1", 1, b"{}"),
        sign(&s, "msg_1", 1, b"{}")
    );
}

#[test]
fn the_signature_covers_the_id_the_timestamp_and_the_body() {
    let s = secret(COUNTING_SECRET);
    let base = sign(&s, "msg_1", 1700000000, b"{}");
    assert_ne!(base, sign(&s, "msg_2", 1700000000, b"{}"));
    assert_ne!(base, sign(&s, "msg_1", 1700000001, b"{}"));
    assert_ne!(base, sign(&s, "msg_1", 1700000000, b"{ }"));
}

#[test]
fn a_generated_secret_parses_back_with_a_32_byte_key() {
    let s = WebhookSecret::generate();
    assert!(s.as_str().starts_with(SECRET_PREFIX));
    assert_eq!(WebhookSecret::parse(s.as_str()), Some(s.clone()));
    assert_eq!(s.key().len(), 32);
    assert_ne!(WebhookSecret::generate(), s, "two secrets are never alike");
}

#[test]
fn parse_keeps_the_whole_text() {
    assert_eq!(secret(REFERENCE_SECRET).as_str(), REFERENCE_SECRET);
}

#[test]
fn parse_refuses_a_wrong_prefix() {
    assert_eq!(
        WebhookSecret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        None
    );
    assert_eq!(
        WebhookSecret::parse("whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        None
    );
    assert_eq!(
        WebhookSecret::parse("WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        None
    );
}

#[test]
fn parse_refuses_bad_base64() {
    for bad in [
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=",
        "whsec_MfKQ9r8G-KYqrTwjUPD8ILPZIo2LaLaSw",
        "whsec_ MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    ] {
        assert_eq!(WebhookSecret::parse(bad), None, "{bad}");
    }
}

#[test]
fn parse_refuses_a_key_too_short_or_too_long() {
    assert_eq!(WebhookSecret::parse("whsec_"), None);
    let short = format!("{SECRET_PREFIX}{}", STANDARD.encode([7u8; 23]));
    assert_eq!(WebhookSecret::parse(&short), None);
    let long = format!("{SECRET_PREFIX}{}", STANDARD.encode([7u8; 65]));
    assert_eq!(WebhookSecret::parse(&long), None);
    for n in [24, 64] {
        let edge = format!("{SECRET_PREFIX}{}", STANDARD.encode(vec![7u8; n]));
        assert!(WebhookSecret::parse(&edge).is_some(), "{n} bytes");
    }
}

#[test]
fn debug_never_prints_the_secret() {
    let s = secret(REFERENCE_SECRET);
    let printed = format!("{s:?} {:?}", Some(&s));
    assert!(!printed.contains("MfKQ9r8G"), "{printed}");
    assert_eq!(format!("{s:?}"), "WebhookSecret(..)");
}
