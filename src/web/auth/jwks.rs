//! The identity provider's signing keys: fetched from `auth.jwks_url`, cached by `kid`.
//!
//! A token naming a `kid` the cache lacks makes one fetch, at most once per
//! `auth.jwks_min_refresh_secs` (requests waiting for the same fetch share it); a background
//! task fetches again before the cache grows stale (`auth.jwks_refresh_secs`, else the
//! answer's `Cache-Control: max-age` within bounds), and never later than
//! `auth.jwks_max_fresh_secs`, so a key the provider revoked is dropped within that. A
//! failed fetch keeps the cached keys: with the provider down or slow, tokens of known keys
//! keep working and a new `kid` is refused (401) after at most `auth.jwks_timeout_ms`.
//! Redirects are not followed (a 3xx is a failed fetch): the keys come from the configured
//! URL only. Symmetric keys (`kty: oct`) in a JWKS are never used. This module must never
//! block a request on the provider for longer than that timeout.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde::Deserialize;
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::web::error::ApiError;
use crate::web::settings::AuthSettings;

/// The largest JWKS document read (providers publish a few keys of a few KiB).
const MAX_BYTES: usize = 1 << 20;
/// The floor of a provider's `Cache-Control: max-age`, and the freshness without one (the
/// ceiling of both is `auth.jwks_max_fresh_secs`).
const MIN_FRESH: Duration = Duration::from_secs(60);
const DEFAULT_FRESH: Duration = Duration::from_secs(300);

/// The key source of `auth.jwks_url`; cheap to clone.
#[derive(Clone)]
pub struct Jwks {
    inner: Arc<Inner>,
}

struct Inner {
    url: String,
    client: reqwest::Client,
    min_refresh: Duration,
    refresh: Option<Duration>,
    /// The longest a key set is used before it is fetched again.
    max_fresh: Duration,
    /// Where fetches run: the runtime the service was built on, not an HTTP worker's.
    runtime: Handle,
    keys: RwLock<Arc<HashMap<String, Arc<PublishedKey>>>>,
    /// Held while a fetch runs; when the last one started.
    last_attempt: tokio::sync::Mutex<Option<Instant>>,
    /// When the background refresh is due.
    next_due: Mutex<Instant>,
}

/// One verification key of the set.
pub struct PublishedKey {
    key: DecodingKey,
    family: AlgorithmFamily,
    /// The key's `alg`, when it names one.
    alg: Option<Algorithm>,
    curve: Option<EllipticCurve>,
}

impl PublishedKey {
    pub fn decoding_key(&self) -> &DecodingKey {
        &self.key
    }

    /// Whether a token of `alg` may be checked with this key: same type (`kty`), same `alg`
    /// when the key names one, and the curve of the algorithm.
    fn fits(&self, alg: Algorithm) -> bool {
        let curve = match (alg, &self.curve) {
            (Algorithm::ES256, Some(c)) => *c == EllipticCurve::P256,
            (Algorithm::ES384, Some(c)) => *c == EllipticCurve::P384,
            _ => true,
        };
        self.family == alg.family() && self.alg.is_none_or(|a| a == alg) && curve
    }

    /// The key of one JWK, with its `kid`; why it is skipped otherwise.
    fn parse(raw: Value) -> Result<(String, Self), &'static str> {
        let jwk: Jwk = serde_json::from_value(raw).map_err(|_| "not a JWK")?;
        let kid = jwk.common.key_id.clone().ok_or("no kid")?;
        if jwk
            .common
            .public_key_use
            .as_ref()
            .is_some_and(|u| *u != PublicKeyUse::Signature)
        {
            return Err("not a signing key (use)");
        }
        let (family, curve) = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => (AlgorithmFamily::Rsa, None),
            AlgorithmParameters::EllipticCurve(p) => (AlgorithmFamily::Ec, Some(p.curve.clone())),
            AlgorithmParameters::OctetKeyPair(_) => (AlgorithmFamily::Ed, None),
            AlgorithmParameters::OctetKey(_) => return Err("a symmetric key (kty oct)"),
            _ => return Err("an unknown key type"),
        };
        let alg = match jwk.common.key_algorithm {
            None => None,
            Some(a) => Some(Algorithm::try_from(a).map_err(|_| "not a signature algorithm")?),
        };
        let key = DecodingKey::from_jwk(&jwk).map_err(|_| "unreadable key material")?;
        Ok((
            kid,
            Self {
                key,
                family,
                alg,
                curve,
            },
        ))
    }
}

impl Jwks {
    /// The key source of `auth.jwks_url`, if set; fetches nothing yet. Must be called on the
    /// runtime that is to run the fetches.
    pub fn from_settings(settings: &AuthSettings) -> anyhow::Result<Option<Self>> {
        let Some(url) = &settings.jwks_url else {
            return Ok(None);
        };
        let client = reqwest::Client::builder()
            .timeout(settings.jwks_timeout)
            .connect_timeout(settings.jwks_timeout)
            .https_only(url.starts_with("https://"))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .context("could not build the JWKS client")?;
        let inner = Inner {
            url: url.clone(),
            client,
            min_refresh: settings.jwks_min_refresh,
            refresh: settings.jwks_refresh,
            max_fresh: settings.jwks_max_fresh,
            runtime: Handle::current(),
            keys: RwLock::new(Arc::new(HashMap::new())),
            last_attempt: tokio::sync::Mutex::new(None),
            next_due: Mutex::new(Instant::now()),
        };
        Ok(Some(Self {
            inner: Arc::new(inner),
        }))
    }

    /// Fetches the keys now (start-up). A failure is logged, not returned: tokens of this
    /// provider are refused until a later fetch brings its keys.
    pub async fn load(&self) -> bool {
        self.inner.fetch_now().await
    }

    /// Refreshes the keys whenever they are due, until `shutdown`.
    pub fn spawn_refresher(&self, shutdown: CancellationToken) -> JoinHandle<()> {
        let inner = self.inner.clone();
        self.inner.runtime.spawn(async move {
            loop {
                let due = *inner.next_due.lock().unwrap();
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep_until(due.into()) => {}
                }
                if Instant::now() >= *inner.next_due.lock().unwrap() {
                    inner.fetch_now().await;
                }
            }
        })
    }

    /// The key `kid` names, if it may check a token of `alg`.
    pub async fn key_for(&self, kid: &str, alg: Algorithm) -> Result<Arc<PublishedKey>, ApiError> {
        let key = match self.inner.cached(kid) {
            Some(key) => Some(key),
            None => {
                let (inner, kid) = (self.inner.clone(), kid.to_string());
                // On the service's runtime: the fetch finishes even if this request goes.
                let fetch = self
                    .inner
                    .runtime
                    .spawn(async move { inner.refresh_for(&kid).await });
                fetch.await.map_err(|e| ApiError::internal(e.into()))?
            }
        };
        let key = key.ok_or_else(|| {
            ApiError::unauthorized(
                "the bearer token's key (kid) is not one the identity provider publishes",
            )
        })?;
        if !key.fits(alg) {
            return Err(ApiError::unauthorized(
                "the bearer token's algorithm (alg) does not match its key",
            ));
        }
        Ok(key)
    }
}

impl Inner {
    fn cached(&self, kid: &str) -> Option<Arc<PublishedKey>> {
        self.keys.read().unwrap().get(kid).cloned()
    }

    /// A fetch for an unknown `kid`, unless one started less than `min_refresh` ago (whoever
    /// waited for that one gets what it brought).
    async fn refresh_for(&self, kid: &str) -> Option<Arc<PublishedKey>> {
        let mut last = self.last_attempt.lock().await;
        if let Some(key) = self.cached(kid) {
            return Some(key);
        }
        if last.is_some_and(|at| at.elapsed() < self.min_refresh) {
            tracing::debug!(
                kid,
                "unknown JWKS kid: the last fetch is too recent to fetch again"
            );
            return None;
        }
        *last = Some(Instant::now());
        self.fetch_and_store().await;
        self.cached(kid)
    }

    async fn fetch_now(&self) -> bool {
        let mut last = self.last_attempt.lock().await;
        *last = Some(Instant::now());
        self.fetch_and_store().await
    }

    /// One fetch; on success the new keys replace the old ones, on failure the old ones stay.
    async fn fetch_and_store(&self) -> bool {
        match self.fetch().await {
            Ok((keys, fresh)) => {
                tracing::info!(
                    keys = keys.len(),
                    fresh_secs = fresh.as_secs(),
                    "JWKS fetched"
                );
                *self.keys.write().unwrap() = Arc::new(keys);
                *self.next_due.lock().unwrap() = Instant::now() + fresh;
                true
            }
            Err(e) => {
                tracing::warn!(url = %self.url, error = %format!("{e:#}"), "JWKS fetch failed: the cached keys stay in use");
                *self.next_due.lock().unwrap() = Instant::now() + self.min_refresh;
                false
            }
        }
    }

    async fn fetch(&self) -> anyhow::Result<(HashMap<String, Arc<PublishedKey>>, Duration)> {
        let mut response = self
            .client
            .get(&self.url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .context("request failed")?;
        let status = response.status();
        if status.is_redirection() {
            bail!("answered {status}, a redirect: redirects are not followed");
        }
        if !status.is_success() {
            bail!("answered {status}");
        }
        let cache_control = response
            .headers()
            .get(reqwest::header::CACHE_CONTROL)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if response
            .content_length()
            .is_some_and(|n| n > MAX_BYTES as u64)
        {
            bail!("the key set is larger than {MAX_BYTES} bytes");
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.context("reading the key set")? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_BYTES {
                bail!("the key set is larger than {MAX_BYTES} bytes");
            }
        }
        let keys = parse_key_set(&body)?;
        let fresh = freshness(self.refresh, cache_control.as_deref(), self.max_fresh);
        Ok((keys, fresh))
    }
}

/// The usable keys of a JWKS document, by `kid`. None usable is an error: the cached keys
/// are better than an empty set.
fn parse_key_set(body: &[u8]) -> anyhow::Result<HashMap<String, Arc<PublishedKey>>> {
    #[derive(Deserialize)]
    struct KeySet {
        keys: Vec<Value>,
    }
    let set: KeySet = serde_json::from_slice(body).context("not a JSON key set")?;
    let mut keys = HashMap::new();
    for raw in set.keys {
        match PublishedKey::parse(raw) {
            Ok((kid, key)) => {
                keys.insert(kid, Arc::new(key));
            }
            Err(why) => tracing::debug!(why, "JWKS key skipped"),
        }
    }
    if keys.is_empty() {
        bail!("the key set has no usable signing key");
    }
    Ok(keys)
}

/// How long a fetched key set is fresh: `configured` when set, else the answer's `max-age`
/// (`no-cache` and `no-store` count as 0) at least [`MIN_FRESH`], else `DEFAULT_FRESH`; in
/// every case at most `max_fresh`.
fn freshness(configured: Option<Duration>, cache_control: Option<&str>, max: Duration) -> Duration {
    if let Some(every) = configured {
        return every.min(max);
    }
    let max_age = cache_control.and_then(|cc| {
        cc.split(',').find_map(|d| {
            let d = d.trim().to_ascii_lowercase();
            match d.strip_prefix("max-age=") {
                Some(n) => n.trim_matches('"').parse::<u64>().ok(),
                None => matches!(d.as_str(), "no-cache" | "no-store").then_some(0),
            }
        })
    });
    // Not `clamp`: `max` may be below the floor (it wins).
    let fresh = max_age.map_or(DEFAULT_FRESH, |secs| {
        Duration::from_secs(secs).max(MIN_FRESH)
    });
    fresh.min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freshness_follows_max_age_within_bounds() {
        let minutes = |m: u64| Duration::from_secs(m * 60);
        let hour = minutes(60);
        assert_eq!(freshness(None, None, hour), DEFAULT_FRESH);
        let public = Some("public, max-age=600");
        assert_eq!(freshness(None, public, hour), minutes(10));
        assert_eq!(
            freshness(None, Some("max-age=5"), hour),
            MIN_FRESH,
            "floored"
        );
        assert_eq!(freshness(None, Some("no-cache"), hour), MIN_FRESH);
        let day = Some("max-age=86400");
        assert_eq!(freshness(None, day, hour), hour, "capped");
        let huge = Some("max-age=18446744073709551615");
        assert_eq!(freshness(None, huge, hour), hour, "capped");
        assert_eq!(freshness(None, Some("private"), hour), DEFAULT_FRESH);
        let every = Duration::from_secs(7);
        assert_eq!(freshness(Some(every), Some("max-age=600"), hour), every);
        assert_eq!(freshness(Some(minutes(120)), None, hour), hour, "capped");
        let second = Duration::from_secs(1);
        assert_eq!(freshness(None, day, second), second, "below the floor");
        assert_eq!(freshness(None, None, second), second);
    }

    #[test]
    fn only_signing_keys_of_a_known_type_with_a_kid_are_kept() {
        let rsa = serde_json::json!({"kty": "RSA", "kid": "r", "n": "sXch", "e": "AQAB"});
        let set = serde_json::json!({"keys": [
            rsa,
            {"kty": "oct", "kid": "s", "k": "c2VjcmV0"},
            {"kty": "RSA", "n": "sXch", "e": "AQAB"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": "sXch", "e": "AQAB"},
            {"kty": "XYZ", "kid": "x"},
            "not even an object",
        ]});
        let keys = parse_key_set(set.to_string().as_bytes()).unwrap();
        assert_eq!(keys.keys().collect::<Vec<_>>(), ["r"]);
        assert!(keys["r"].fits(Algorithm::RS256));
        assert!(!keys["r"].fits(Algorithm::ES256));
        assert!(!keys["r"].fits(Algorithm::HS256));
        let only_oct = serde_json::json!({"keys": [{"kty": "oct", "kid": "s", "k": "c2VjcmV0"}]});
        assert!(parse_key_set(only_oct.to_string().as_bytes()).is_err());
    }
}
