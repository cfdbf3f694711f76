//! The AMQP publisher: one lazily (re)connected connection (to the first node that answers,
//! see [`Nodes`]), a confirm-mode channel, the durable topic exchange declared on
//! connect. A publish succeeds only when the broker confirms it and did not return it as
//! unroutable.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{anyhow, Context};
use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions,
    QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{
    BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ErrorKind,
    ExchangeKind,
};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::Mutex;

use super::nodes::Nodes;
use super::settings::{AmqpSettings, QueueType};

/// Why a publish failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The broker took the message and refused it (unroutable, nack), or it is too large
    /// to send: the message's fault, so the row is retried with its own backoff.
    #[error("{0}")]
    Refused(String),
    /// The broker is unreachable or did not confirm in time: nothing about the message.
    #[error("{0:#}")]
    Unavailable(anyhow::Error),
}

/// Where a message goes: an exchange (None: the service's own topic exchange; `""`: the
/// default exchange, which routes to the queue named by the routing key) and a routing key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub exchange: Option<String>,
    pub routing_key: String,
}

impl Destination {
    /// The service's topic exchange, with `routing_key`.
    pub fn topic(routing_key: &str) -> Self {
        Self {
            exchange: None,
            routing_key: routing_key.to_string(),
        }
    }

    /// One queue only, through the default exchange.
    pub fn queue(name: &str) -> Self {
        Self {
            exchange: Some(String::new()),
            routing_key: name.to_string(),
        }
    }
}

/// Most messages the archive queue keeps (the oldest are dropped first).
const ARCHIVE_MAX_LENGTH: i64 = 100_000;

/// AMQP reply code 406: a declare whose arguments differ from the existing queue's.
const PRECONDITION_FAILED: u16 = 406;

pub struct AmqpPublisher {
    nodes: Nodes,
    exchange: String,
    bind_queue: Option<String>,
    queue_type: QueueType,
    timeout: Duration,
    max_message_bytes: usize,
    live: Mutex<Option<Live>>,
    /// Numbers the connections made, so a failed publish retires only the one it used.
    made: AtomicU64,
}

/// The open connection and its confirm-mode channel.
struct Live {
    conn: Connection,
    ch: Channel,
    generation: u64,
}

impl Live {
    fn healthy(&self) -> bool {
        self.conn.status().connected() && self.ch.status().connected()
    }
}

impl AmqpPublisher {
    /// The publisher `[amqp]` describes; does not connect.
    pub fn from_settings(settings: &AmqpSettings) -> Self {
        Self {
            nodes: Nodes::new(settings.urls.clone(), settings.connect_timeout),
            exchange: settings.exchange.clone(),
            bind_queue: Some(settings.bind_queue.clone()).filter(|q| !q.trim().is_empty()),
            queue_type: settings.bind_queue_type,
            timeout: settings.timeout,
            max_message_bytes: settings.max_message_bytes,
            live: Mutex::new(None),
            made: AtomicU64::new(0),
        }
    }

    /// A connected confirm-mode channel, connecting (and declaring) when needed: every node
    /// is tried within two thirds of `amqp.timeout_ms`, which leaves the rest of a
    /// publish's deadline to the publish and its confirm.
    pub async fn channel(&self) -> anyhow::Result<Channel> {
        self.live_channel().await.map(|(ch, _)| ch)
    }

    /// The channel and the number of the connection it belongs to.
    async fn live_channel(&self) -> anyhow::Result<(Channel, u64)> {
        let mut live = self.live.lock().await;
        if let Some(l) = live.as_ref().filter(|l| l.healthy()) {
            return Ok((l.ch.clone(), l.generation));
        }
        if let Some(dead) = live.take() {
            retire(dead);
        }
        let opened = self
            .nodes
            .connect_any(self.timeout * 2 / 3, |url| async move {
                self.connect(&url).await
            })
            .await?;
        let (conn, ch) = opened.value;
        let generation = self.made.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::info!(node = opened.node, exchange = %self.exchange, "connected to rabbitmq");
        *live = Some(Live {
            conn,
            ch: ch.clone(),
            generation,
        });
        Ok((ch, generation))
    }

    /// A confirm-mode channel on `conn`.
    async fn confirm_channel(conn: &Connection) -> anyhow::Result<Channel> {
        let ch = conn.create_channel().await.context("amqp channel")?;
        ch.confirm_select(ConfirmSelectOptions::default())
            .await
            .context("amqp confirm mode")?;
        Ok(ch)
    }

    async fn connect(&self, url: &SecretString) -> anyhow::Result<(Connection, Channel)> {
        let props = ConnectionProperties::default().with_connection_name("kh-review".into());
        // lapin's errors name the host and port, never the URL with its password.
        let conn = Connection::connect(url.expose_secret(), props)
            .await
            .context("amqp connect")?;
        let mut ch = Self::confirm_channel(&conn).await?;
        ch.exchange_declare(
            self.exchange.as_str().into(),
            ExchangeKind::Topic,
            ExchangeDeclareOptions {
                durable: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .context("amqp exchange declare")?;
        if let Some(q) = &self.bind_queue {
            ch = self.declare_archive(&conn, ch, q).await?;
            // Every routing key (`#`), so that no new event type is ever unroutable.
            ch.queue_bind(
                q.as_str().into(),
                self.exchange.as_str().into(),
                "#".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .context("amqp queue bind")?;
        }
        Ok((conn, ch))
    }

    /// Declares the archive queue: a bounded queue of the configured type that keeps every
    /// routing key routable (an unroutable event blocks its document's later events). A
    /// queue that operations made with other arguments (say a quorum queue, or another
    /// `x-max-length`) is refused with `PRECONDITION_FAILED`, which closes the channel: it
    /// is then used as it is (passive declare on a new channel), with a warning. Returns
    /// the channel that is still open.
    async fn declare_archive(
        &self,
        conn: &Connection,
        ch: Channel,
        queue: &str,
    ) -> anyhow::Result<Channel> {
        let mut args = FieldTable::default();
        args.insert(
            "x-max-length".into(),
            AMQPValue::LongLongInt(ARCHIVE_MAX_LENGTH),
        );
        args.insert(
            "x-queue-type".into(),
            AMQPValue::LongString(self.queue_type.as_str().into()),
        );
        let durable = QueueDeclareOptions {
            durable: true,
            ..Default::default()
        };
        match ch.queue_declare(queue.into(), durable, args).await {
            Ok(_) => Ok(ch),
            Err(e) if matches!(e.kind(), ErrorKind::ProtocolError(p) if p.get_id() == PRECONDITION_FAILED) =>
            {
                tracing::warn!(
                    queue,
                    wanted = self.queue_type.as_str(),
                    reason = %e,
                    "the archive queue exists with other arguments: using it as it is"
                );
                let ch = Self::confirm_channel(conn).await?;
                let passive = QueueDeclareOptions {
                    passive: true,
                    ..Default::default()
                };
                ch.queue_declare(queue.into(), passive, FieldTable::default())
                    .await
                    .context("amqp queue declare (passive)")?;
                Ok(ch)
            }
            Err(e) => Err(e).context("amqp queue declare"),
        }
    }

    /// The exchange every event is published to.
    pub fn exchange(&self) -> &str {
        &self.exchange
    }

    /// Publishes one persistent event to `to`, with `headers` (the caller builds them from
    /// the outbox row), and waits for the broker's confirm.
    pub async fn publish(
        &self,
        to: &Destination,
        message_id: &str,
        event_type: &str,
        headers: FieldTable,
        body: &[u8],
    ) -> Result<(), PublishError> {
        let exchange = to.exchange.as_deref().unwrap_or(&self.exchange);
        let routing_key = to.routing_key.as_str();
        if body.len() > self.max_message_bytes {
            return Err(PublishError::Refused(format!(
                "too large: {} bytes, more than amqp.max_message_bytes ({})",
                body.len(),
                self.max_message_bytes
            )));
        }
        let sent = self
            .within_deadline(|ch| async move {
                let options = BasicPublishOptions {
                    mandatory: true,
                    ..Default::default()
                };
                let props = message_properties(message_id, event_type, headers);
                let confirmation = ch
                    .basic_publish(exchange.into(), routing_key.into(), options, body, props)
                    .await
                    .context("amqp publish")?
                    .await
                    .context("amqp confirm")?;
                if confirmation == Confirmation::NotRequested {
                    return Err(anyhow!("channel is not in confirm mode"));
                }
                Ok(confirmation)
            })
            .await;
        match sent {
            Err(e) => Err(PublishError::Unavailable(e)),
            Ok(Confirmation::Ack(None)) => Ok(()),
            Ok(Confirmation::Ack(Some(_))) => Err(PublishError::Refused(format!(
                "unroutable: no queue is bound to {} for {routing_key}",
                match exchange {
                    "" => "the default exchange",
                    named => named,
                }
            ))),
            Ok(Confirmation::Nack(_)) => Err(PublishError::Refused(
                "broker refused the message (nack)".into(),
            )),
            Ok(Confirmation::NotRequested) => unreachable!("refused above"),
        }
    }

    /// Runs `work` on the live confirm channel (connecting first if needed), all within
    /// `amqp.timeout_ms`. When it fails or runs out of time, the connection it used is given
    /// up on even if it looks open: a node that stops answering (a partition, dropped
    /// packets) keeps the socket open, and only the heartbeat, a minute later, would notice.
    /// The next call connects afresh, starting at the next node; the one that failed is
    /// closed in the background.
    pub(super) async fn within_deadline<T, F, Fut>(&self, work: F) -> anyhow::Result<T>
    where
        F: FnOnce(Channel) -> Fut,
        Fut: Future<Output = anyhow::Result<T>>,
    {
        let mut used = None;
        let done = tokio::time::timeout(self.timeout, async {
            let (ch, generation) = self.live_channel().await?;
            used = Some(generation);
            work(ch).await
        })
        .await
        .map_err(|_| anyhow!("rabbitmq did not confirm within {:?}", self.timeout))
        .and_then(|r| r);
        if let (Err(_), Some(generation)) = (&done, used) {
            let mut live = self.live.lock().await;
            if live.as_ref().is_some_and(|l| l.generation == generation) {
                retire(live.take().expect("checked above"));
            }
        }
        done
    }

    /// Whether a connection is open now (publishing would not have to connect first).
    pub async fn is_connected(&self) -> bool {
        self.live.lock().await.as_ref().is_some_and(Live::healthy)
    }

    /// A new plain channel (no confirms) on the live connection, for a declare that may
    /// close its channel (a passive declare of a missing queue) without touching the
    /// publishing one.
    pub async fn side_channel(&self) -> anyhow::Result<Channel> {
        self.channel().await?;
        let live = self.live.lock().await;
        let l = live.as_ref().context("rabbitmq connection lost")?;
        l.conn.create_channel().await.context("amqp channel")
    }

    /// How long one publish may take (`amqp.timeout_ms`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub async fn ping(&self) -> anyhow::Result<()> {
        self.channel().await.map(|_| ())
    }

    pub async fn close(&self) {
        if let Some(l) = self.live.lock().await.take() {
            let closing = l.conn.close(200, "shutdown".into());
            let _ = tokio::time::timeout(self.timeout, closing).await;
        }
    }
}

/// Closes a connection given up on, without waiting for it: a silent node would never
/// answer the close.
fn retire(dead: Live) {
    tokio::spawn(async move {
        let closing = dead.conn.close(320, "reconnecting".into());
        let _ = tokio::time::timeout(Duration::from_secs(1), closing).await;
    });
}

/// The properties of every event message: persistent, JSON, its id and type, `headers`.
pub(super) fn message_properties(
    message_id: &str,
    event_type: &str,
    headers: FieldTable,
) -> BasicProperties {
    BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_message_id(message_id.into())
        .with_type(event_type.into())
        .with_app_id("kh-review".into())
        .with_timestamp(chrono::Utc::now().timestamp() as u64)
        .with_headers(headers)
}
