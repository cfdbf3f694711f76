//! Required queues (`amqp.required_queues`): consumer queues that must receive every
//! event. The `mandatory` flag only tells "routed to no queue at all", which a queue bound
//! to `#` (the archive queue) always prevents; it cannot tell that one given queue got the
//! message. So each required queue gets its own copy, published straight to it through the
//! default exchange (exchange "", routing key = the queue's name) with `mandatory`: the
//! broker returns that copy when the queue does not exist. The copies follow the exchange
//! publish on the same confirm-mode channel, and the row is delivered only when every one
//! was confirmed and none came back. A required queue must therefore not also be bound to
//! the exchange (it would get each event twice).
//!
//! A missing required queue is an outage, not the message's fault: the row waits, no
//! attempt counted, never parked. Before each publish the queues' existence is looked up
//! (passive declares on a channel of their own, at most once per [`FRESH_FOR`]), so while
//! one is missing the other consumers do not get the event again at every retry.

use std::time::{Duration, Instant};

use anyhow::anyhow;
use futures_util::future::join_all;
use lapin::options::{BasicPublishOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Confirmation, ErrorKind};
use tokio::sync::Mutex;

use super::publisher::{message_properties, AmqpPublisher, Destination, PublishError};

/// How long a look-up of the queues' existence is reused.
pub const FRESH_FOR: Duration = Duration::from_secs(1);

/// AMQP reply code 404: a passive declare of a queue that does not exist.
const NOT_FOUND: u16 = 404;

/// The event's exchange publish, checked before and followed by the required queues'
/// copies: delivered only when all of them are.
pub(super) async fn publish(
    publisher: &AmqpPublisher,
    required: &RequiredQueues,
    to: &Destination,
    message_id: &str,
    event_type: &str,
    headers: FieldTable,
    body: &[u8],
) -> Result<(), PublishError> {
    required.check(publisher).await?;
    publisher
        .publish(to, message_id, event_type, headers.clone(), body)
        .await?;
    required
        .send_copies(publisher, message_id, event_type, headers, body)
        .await
}

pub struct RequiredQueues {
    names: Vec<String>,
    /// The last look-up: when it started, and the queues it found missing.
    looked: Mutex<Option<(Instant, Vec<String>)>>,
}

impl RequiredQueues {
    pub fn new(names: Vec<String>) -> Self {
        Self {
            names,
            looked: Mutex::new(None),
        }
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The required queues that do not exist, as seen at most [`FRESH_FOR`] ago; an error
    /// when the broker could not be asked.
    pub async fn missing(&self, publisher: &AmqpPublisher) -> anyhow::Result<Vec<String>> {
        if self.names.is_empty() {
            return Ok(Vec::new());
        }
        let mut looked = self.looked.lock().await;
        if let Some((at, missing)) = &*looked {
            if at.elapsed() < FRESH_FOR {
                return Ok(missing.clone());
            }
        }
        let started = Instant::now();
        let missing = tokio::time::timeout(publisher.timeout(), self.look(publisher))
            .await
            .map_err(|_| anyhow!("rabbitmq did not answer within {:?}", publisher.timeout()))??;
        *looked = Some((started, missing.clone()));
        Ok(missing)
    }

    /// Passive declares, one by one; a missing queue closes its channel, so the next
    /// look-up opens another.
    async fn look(&self, publisher: &AmqpPublisher) -> anyhow::Result<Vec<String>> {
        let passive = QueueDeclareOptions {
            passive: true,
            ..Default::default()
        };
        let mut missing = Vec::new();
        let mut ch = publisher.side_channel().await?;
        for name in &self.names {
            match ch
                .queue_declare(name.as_str().into(), passive, FieldTable::default())
                .await
            {
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::ProtocolError(p) if p.get_id() == NOT_FOUND) =>
                {
                    missing.push(name.clone());
                    ch = publisher.side_channel().await?;
                }
                Err(e) => return Err(anyhow::Error::new(e).context("amqp queue declare (passive)")),
            }
        }
        let _ = ch.close(200, "done".into()).await;
        Ok(missing)
    }

    /// Forgets the last look-up (a copy came back: a queue went away since).
    async fn forget(&self) {
        *self.looked.lock().await = None;
    }

    /// Refuses to publish while a required queue is missing (an outage: the row waits).
    pub async fn check(&self, publisher: &AmqpPublisher) -> Result<(), PublishError> {
        let missing = self
            .missing(publisher)
            .await
            .map_err(PublishError::Unavailable)?;
        if missing.is_empty() {
            return Ok(());
        }
        Err(PublishError::Unavailable(anyhow!(
            "required queue missing: {}",
            missing.join(", ")
        )))
    }

    /// Publishes one persistent copy of the event to each required queue through the
    /// default exchange, all pipelined, and waits for every confirm. A copy returned
    /// (its queue is gone) or not confirmed in time is an outage; a nack, a refusal.
    pub async fn send_copies(
        &self,
        publisher: &AmqpPublisher,
        message_id: &str,
        event_type: &str,
        headers: FieldTable,
        body: &[u8],
    ) -> Result<(), PublishError> {
        if self.names.is_empty() {
            return Ok(());
        }
        let sent = publisher
            .within_deadline(|ch| self.publish_all(ch, message_id, event_type, headers, body))
            .await;
        let confirms = sent.map_err(PublishError::Unavailable)?;
        let mut returned = Vec::new();
        for (name, confirm) in self.names.iter().zip(confirms) {
            match confirm {
                Confirmation::Ack(None) => {}
                Confirmation::Ack(Some(_)) => returned.push(name.as_str()),
                Confirmation::Nack(_) => {
                    return Err(PublishError::Refused(format!(
                        "broker refused the copy for required queue {name} (nack)"
                    )))
                }
                Confirmation::NotRequested => {
                    return Err(PublishError::Unavailable(anyhow!(
                        "channel is not in confirm mode"
                    )))
                }
            }
        }
        if returned.is_empty() {
            return Ok(());
        }
        self.forget().await;
        Err(PublishError::Unavailable(anyhow!(
            "required queue missing: {}",
            returned.join(", ")
        )))
    }

    async fn publish_all(
        &self,
        ch: Channel,
        message_id: &str,
        event_type: &str,
        headers: FieldTable,
        body: &[u8],
    ) -> anyhow::Result<Vec<Confirmation>> {
        // The properties and headers of the exchange publish (`AmqpPublisher::publish`).
        let props = message_properties(message_id, event_type, headers);
        let options = BasicPublishOptions {
            mandatory: true,
            ..Default::default()
        };
        let mut pending = Vec::with_capacity(self.names.len());
        for name in &self.names {
            let confirm = ch
                .basic_publish(
                    "".into(),
                    name.as_str().into(),
                    options,
                    body,
                    props.clone(),
                )
                .await?;
            pending.push(confirm);
        }
        let confirms: Result<Vec<_>, _> = join_all(pending).await.into_iter().collect();
        Ok(confirms?)
    }
}
