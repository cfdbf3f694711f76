//! Webhook signatures, as Standard Webhooks 1.0 makes them: an endpoint's secret is
//! `whsec_` followed by the standard base64 of its key, and a delivery's signature is
//! `v1,` followed by the standard base64 of
//! `HMAC-SHA-256(key, "{webhook-id}.{webhook-timestamp}." || body)`. While a secret is
//! rotated both the old and the new one sign, and the `webhook-signature` header carries
//! each signature, separated by a space ([`signature_header`]).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// What every webhook secret starts with.
pub const SECRET_PREFIX: &str = "whsec_";

/// How many random bytes a generated secret's key has.
const GENERATED_KEY_BYTES: usize = 32;

/// The lengths, in bytes, a secret's key may have.
const KEY_BYTES: std::ops::RangeInclusive<usize> = 24..=64;

/// An endpoint's signing secret, the whole `whsec_...` text. Never printed: its `Debug`
/// shows `WebhookSecret(..)`.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(String);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

impl WebhookSecret {
    /// A new secret: [`SECRET_PREFIX`] and the standard base64 (padded) of 32 random bytes.
    pub fn generate() -> Self {
        let mut key = [0u8; GENERATED_KEY_BYTES];
        rand::fill(&mut key);
        Self(format!("{SECRET_PREFIX}{}", STANDARD.encode(key)))
    }

    /// `text` as a secret, if it is one: [`SECRET_PREFIX`], then the standard base64 of a
    /// key of 24 to 64 bytes.
    pub fn parse(text: &str) -> Option<Self> {
        let encoded = text.strip_prefix(SECRET_PREFIX)?;
        let key = STANDARD.decode(encoded).ok()?;
        KEY_BYTES
            .contains(&key.len())
            .then(|| Self(text.to_owned()))
    }

    /// The whole secret, `whsec_` and all: what the endpoint's owner is shown once.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key the signatures are made with: the decoded part after the prefix.
    fn key(&self) -> Vec<u8> {
        let encoded = self.0.strip_prefix(SECRET_PREFIX).unwrap_or_default();
        // Every secret was generated or parsed, so its base64 decodes.
        STANDARD.decode(encoded).unwrap_or_default()
    }
}

/// The signature of one delivery under `secret`: `v1,` and the standard base64 of the
/// HMAC-SHA-256 of `"{id}.{timestamp}."` followed by `body`.
pub fn sign(secret: &WebhookSecret, id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(&secret.key()).expect("HMAC accepts any key length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The `webhook-signature` header of one delivery: its signature under each of `secrets`
/// (two while a secret is rotated), separated by a single space.
pub fn signature_header(
    secrets: &[&WebhookSecret],
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    secrets
        .iter()
        .map(|s| sign(s, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
