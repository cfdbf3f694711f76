//! Listens for events on a queue of its own and notes when each review's event arrived.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use hdrhistogram::Histogram;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::Channel;
use uuid::Uuid;

use super::{names, BenchEnv, Figures};

/// Arrival times of events of one type (`document.approved` unless told), by review (or
/// by another id of the event's).
pub struct Arrivals {
    seen: Arc<Mutex<HashMap<Uuid, Instant>>>,
    channel: Channel,
}

impl BenchEnv {
    /// Starts listening (a fresh queue bound to `document.approved`).
    pub async fn listen(&self) -> anyhow::Result<Arrivals> {
        self.listen_to("document.approved").await
    }

    /// Starts listening to events of one type (a fresh queue bound to its routing key).
    pub async fn listen_to(&self, routing_key: &str) -> anyhow::Result<Arrivals> {
        self.listen_by(routing_key, "review_id").await
    }

    /// The same, noting each event by the id its field `key` names (`review_id`,
    /// `document_id`).
    pub async fn listen_by(
        &self,
        routing_key: &str,
        key: &'static str,
    ) -> anyhow::Result<Arrivals> {
        let ch = self.amqp_conn().create_channel().await?;
        ch.queue_delete(
            names().arrivals.as_str().into(),
            QueueDeleteOptions::default(),
        )
        .await?;
        ch.queue_declare(
            names().arrivals.as_str().into(),
            QueueDeclareOptions::default(),
            FieldTable::default(),
        )
        .await?;
        ch.queue_bind(
            names().arrivals.as_str().into(),
            names().exchange.as_str().into(),
            routing_key.into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
        let mut consumer = ch
            .basic_consume(
                names().arrivals.as_str().into(),
                "arrivals".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await?;
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let noted = seen.clone();
        tokio::spawn(async move {
            while let Some(Ok(delivery)) = consumer.next().await {
                let at = Instant::now();
                let body: serde_json::Value =
                    serde_json::from_slice(&delivery.data).unwrap_or_default();
                if let Some(review) = body[key].as_str().and_then(|s| s.parse().ok()) {
                    noted.lock().unwrap().insert(review, at);
                }
                let _ = delivery.ack(BasicAckOptions::default()).await;
            }
        });
        Ok(Arrivals { seen, channel: ch })
    }
}

impl Arrivals {
    pub fn arrived(&self, review: &Uuid) -> Option<Instant> {
        self.seen.lock().unwrap().get(review).copied()
    }

    /// How many reviews' events have arrived.
    pub fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Waits (up to 120 s) until the events of `n` ids have arrived; `what` names them.
    pub async fn await_count(&self, n: usize, what: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.count() < n {
            anyhow::ensure!(
                Instant::now() < deadline,
                "only {} of {n} {what} events arrived",
                self.count()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }

    /// The time from `from` to the event of each of `ids`: its figures, and the longest.
    pub fn lags(
        &self,
        ids: &[Uuid],
        from: Instant,
        what: &str,
    ) -> anyhow::Result<(Figures, Duration)> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)?;
        let mut last = Duration::ZERO;
        for id in ids {
            let at = self
                .arrived(id)
                .ok_or_else(|| anyhow::anyhow!("no {what} event for {id}"))?;
            let after = at.saturating_duration_since(from);
            last = last.max(after);
            h.record(after.as_micros().max(1) as u64)?;
        }
        Ok((Figures::from_hist(&h, ids.len(), 0, last), last))
    }

    pub async fn close(self) -> anyhow::Result<()> {
        self.channel
            .queue_delete(
                names().arrivals.as_str().into(),
                QueueDeleteOptions::default(),
            )
            .await?;
        Ok(())
    }
}
