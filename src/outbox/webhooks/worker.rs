//! The deliverer: on each instance, every `webhooks.poll_ms` and whenever one of its
//! deliveries ends (so an endpoint's next delivery need not wait for the poll), it claims
//! the due deliveries (`store::webhooks::deliveries`: at most `per_endpoint_concurrency`
//! in flight per endpoint over every instance, at most `concurrency` on this one) and
//! sends each, signed, in a task of its own; then records the outcome: delivered, due again after the
//! schedule's wait (or the receiver's `Retry-After`, when longer), or failed. An instance
//! that dies mid-delivery leaves its claim to lapse, and another sends the delivery again:
//! delivery is at least once, and `webhook-id` (the event id) lets a receiver drop repeats.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use prometheus::core::Collector;
use prometheus::{IntCounterVec, IntGauge, Opts};
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use super::client::delivery_client;
use super::disabled::announce_disabled;
use super::settings::WebhookSettings;
use crate::domain::webhooks::{
    check_url, parse_retry_after, signature_header, AllowedRanges, RetrySchedule, WebhookSecret,
};
use crate::outbox::envelope::EventSettings;
use crate::outbox::publisher::AmqpPublisher;
use crate::store::{ClaimLimits, ClaimedDelivery, Failure, PgStore};

/// The most characters of an error kept in the delivery log.
const MAX_ERROR: usize = 500;

/// The deliverer's figures, for `/metrics`.
struct DeliveryStats {
    attempts: IntCounterVec,
    in_flight: IntGauge,
}

impl DeliveryStats {
    fn new() -> Self {
        Self {
            attempts: IntCounterVec::new(
                Opts::new(
                    "kh_webhook_attempts_total",
                    "Webhook delivery attempts of this instance by outcome: delivered, retry \
                     (failed, due again), failed (no retry left), gone (410: the endpoint is \
                     disabled)",
                ),
                &["outcome"],
            )
            .expect("valid metric"),
            in_flight: IntGauge::new(
                "kh_webhook_in_flight",
                "Webhook deliveries this instance is sending now",
            )
            .expect("valid metric"),
        }
    }
}

/// What the deliverer runs with.
pub struct Deliverer {
    store: PgStore,
    client: reqwest::Client,
    publisher: Arc<AmqpPublisher>,
    events: EventSettings,
    settings: WebhookSettings,
    schedule: RetrySchedule,
    /// `settings.allowed_ranges`, parsed once.
    allowed: AllowedRanges,
    https_only: bool,
    /// Told when a delivery ends: its endpoint may take the next one now, not at the next
    /// poll.
    ended: Notify,
    stats: DeliveryStats,
}

/// How one attempt went.
enum Outcome {
    Delivered(i32),
    Failed {
        status: Option<i32>,
        error: String,
        retry_after: Option<Duration>,
    },
}

impl Deliverer {
    /// A deliverer on `store` (a background store: every space's rows).
    pub fn new(
        store: PgStore,
        publisher: Arc<AmqpPublisher>,
        events: EventSettings,
        settings: WebhookSettings,
        https_only: bool,
    ) -> Self {
        let allowed = settings.allowed();
        let client = delivery_client(settings.timeout, &allowed);
        Self {
            store,
            client,
            publisher,
            events,
            schedule: settings.schedule(),
            allowed,
            settings,
            https_only,
            ended: Notify::new(),
            stats: DeliveryStats::new(),
        }
    }

    /// The collectors to register with a Prometheus registry.
    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![
            Box::new(self.stats.attempts.clone()),
            Box::new(self.stats.in_flight.clone()),
        ]
    }

    /// Delivers until `stop`; the deliveries in flight then are left to their claims.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let slots = Arc::new(Semaphore::new(self.settings.concurrency as usize));
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(self.settings.poll) => {}
                _ = self.ended.notified() => {}
            }
            let free = slots.available_permits() as i64;
            if free == 0 {
                continue;
            }
            let limits = ClaimLimits {
                per_endpoint: self.settings.per_endpoint_concurrency,
                batch: free,
                lease: self.settings.timeout + Duration::from_secs(15),
            };
            let claimed = match self.store.claim_deliveries(limits).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "could not claim webhook deliveries");
                    continue;
                }
            };
            for delivery in claimed {
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    break; // never: the claim took at most the free slots
                };
                let me = self.clone();
                tokio::spawn(async move {
                    me.deliver(delivery).await;
                    drop(slot);
                    me.ended.notify_one();
                });
            }
        }
    }

    /// Sends `d` once and records how it went.
    async fn deliver(&self, d: ClaimedDelivery) {
        self.stats.in_flight.inc();
        let outcome = self.attempt(&d).await;
        self.stats.in_flight.dec();
        let recorded = match outcome {
            Outcome::Delivered(status) => {
                self.stats.attempts.with_label_values(&["delivered"]).inc();
                self.store.delivery_succeeded(d.id, status).await
            }
            Outcome::Failed {
                status,
                error,
                retry_after,
            } => self.failed(&d, status, &error, retry_after).await,
        };
        if let Err(e) = recorded {
            tracing::warn!(delivery = d.id, error = %e, "could not record a webhook delivery's outcome; it is sent again when its claim lapses");
        }
    }

    async fn failed(
        &self,
        d: &ClaimedDelivery,
        status: Option<i32>,
        error: &str,
        retry_after: Option<Duration>,
    ) -> Result<(), crate::store::StoreError> {
        let gone = status == Some(410);
        let failed_attempts = u32::try_from(d.attempts).unwrap_or(0) + 1;
        let failure = Failure {
            status,
            error,
            retry_in: if gone {
                None
            } else {
                self.schedule.after(failed_attempts, retry_after)
            },
            gone,
            disable_after: self.settings.disable_after,
        };
        let outcome = match (gone, failure.retry_in) {
            (true, _) => "gone",
            (false, Some(_)) => "retry",
            (false, None) => "failed",
        };
        self.stats.attempts.with_label_values(&[outcome]).inc();
        tracing::info!(delivery = d.id, webhook = %d.webhook_id, ?status, error, outcome, "webhook delivery failed");
        if let Some(disabled) = self.store.delivery_failed(d.id, &failure).await? {
            tracing::warn!(webhook = %disabled.id, space = %disabled.space, reason = %disabled.reason, "webhook endpoint disabled");
            announce_disabled(&self.publisher, &self.events, &disabled).await;
        }
        Ok(())
    }

    /// One signed POST of `d`'s event.
    async fn attempt(&self, d: &ClaimedDelivery) -> Outcome {
        // A host that is an address is never looked up: judged here, before each send.
        if let Err(why) = check_url(&d.url, self.https_only, &self.allowed) {
            return failure(None, why, None);
        }
        let body = serde_json::to_vec(&d.payload).expect("a JSON value serializes");
        let headers = signed_headers(d, &body);
        let sent = self
            .client
            .post(&d.url)
            .headers(headers)
            .body(body)
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => Outcome::Delivered(i32::from(r.status().as_u16())),
            Ok(r) => {
                let status = i32::from(r.status().as_u16());
                let retry_after = r
                    .headers()
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| parse_retry_after(v, Utc::now()));
                let error = if r.status().is_redirection() {
                    format!("the receiver answered {status}: redirects are not followed")
                } else {
                    format!("the receiver answered {status}")
                };
                failure(Some(status), error, retry_after)
            }
            Err(e) => failure(None, describe(&e), None),
        }
    }
}

/// A failed attempt's outcome, its error cut to [`MAX_ERROR`] bytes.
fn failure(status: Option<i32>, error: String, retry_after: Option<Duration>) -> Outcome {
    let mut error = error;
    if error.len() > MAX_ERROR {
        let mut cut = MAX_ERROR;
        while !error.is_char_boundary(cut) {
            cut -= 1;
        }
        error.truncate(cut);
    }
    Outcome::Failed {
        status,
        error,
        retry_after,
    }
}

/// The Standard Webhooks headers of `d` with `body`: its id (the event id), the time, and
/// a signature by each live secret.
fn signed_headers(d: &ClaimedDelivery, body: &[u8]) -> HeaderMap {
    let id = d.event_id.to_string();
    let timestamp = Utc::now().timestamp();
    let secrets: Vec<WebhookSecret> = std::iter::once(d.secret.as_str())
        .chain(d.previous_secret.as_deref())
        .filter_map(WebhookSecret::parse)
        .collect();
    let refs: Vec<&WebhookSecret> = secrets.iter().collect();
    let signature = signature_header(&refs, &id, timestamp, body);
    let mut headers = HeaderMap::new();
    let value = |s: &str| HeaderValue::from_str(s).expect("an ASCII header value");
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert("webhook-id", value(&id));
    headers.insert("webhook-timestamp", value(&timestamp.to_string()));
    headers.insert("webhook-signature", value(&signature));
    headers
}

/// A failed send, for the delivery log: what went wrong, with its causes (the guard's
/// refusal among them), never the response body.
fn describe(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "no answer within the timeout"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "the request failed"
    };
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        causes.push(s.to_string());
        source = s.source();
    }
    causes.dedup();
    match causes.last() {
        Some(root) => format!("{what}: {root}"),
        None => what.to_string(),
    }
}
