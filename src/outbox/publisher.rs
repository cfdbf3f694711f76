//! The AMQP publisher: one lazily (re)connected connection, a confirm-mode channel, the
//! durable topic exchange declared on connect. A publish succeeds only when the broker
//! confirms it and did not return it as unroutable.

use std::time::Duration;

use anyhow::{anyhow, Context};
use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions,
    QueueDeclareOptions,
};
use lapin::publisher_confirm::Confirmation;
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::Mutex;

use super::settings::AmqpSettings;

/// Why a publish failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The broker took the message and refused it (unroutable, nack): the message's fault,
    /// so the row is retried with its own backoff.
    #[error("{0}")]
    Refused(String),
    /// The broker is unreachable or did not confirm in time: nothing about the message.
    #[error("{0:#}")]
    Unavailable(anyhow::Error),
}

/// Most messages the archive queue keeps (the oldest are dropped first).
const ARCHIVE_MAX_LENGTH: i64 = 100_000;

pub struct AmqpPublisher {
    url: SecretString,
    exchange: String,
    bind_queue: Option<String>,
    timeout: Duration,
    live: Mutex<Option<(Connection, Channel)>>,
}

impl AmqpPublisher {
    pub fn new(
        url: SecretString,
        exchange: String,
        bind_queue: Option<String>,
        timeout: Duration,
    ) -> Self {
        Self {
            url,
            exchange,
            bind_queue,
            timeout,
            live: Mutex::new(None),
        }
    }

    /// The publisher `[amqp]` describes; does not connect.
    pub fn from_settings(settings: &AmqpSettings) -> Self {
        let bind_queue = Some(settings.bind_queue.clone()).filter(|q| !q.trim().is_empty());
        Self::new(
            settings.url.clone(),
            settings.exchange.clone(),
            bind_queue,
            settings.timeout,
        )
    }

    /// A connected confirm-mode channel, connecting (and declaring) when needed.
    pub async fn channel(&self) -> anyhow::Result<Channel> {
        let mut live = self.live.lock().await;
        if let Some((conn, ch)) = live.as_ref() {
            if conn.status().connected() && ch.status().connected() {
                return Ok(ch.clone());
            }
        }
        *live = None;
        let (conn, ch) = tokio::time::timeout(self.timeout, self.connect())
            .await
            .map_err(|_| anyhow!("rabbitmq did not answer within {:?}", self.timeout))??;
        *live = Some((conn, ch.clone()));
        Ok(ch)
    }

    async fn connect(&self) -> anyhow::Result<(Connection, Channel)> {
        let props = ConnectionProperties::default()
            .with_executor(tokio_executor_trait::Tokio::current())
            .with_reactor(tokio_reactor_trait::Tokio)
            .with_connection_name("kh-review".into());
        let conn = Connection::connect(self.url.expose_secret(), props)
            .await
            .context("amqp connect")?;
        let ch = conn.create_channel().await.context("amqp channel")?;
        ch.confirm_select(ConfirmSelectOptions::default())
            .await
            .context("amqp confirm mode")?;
        ch.exchange_declare(
            &self.exchange,
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
            // A bounded archive: it keeps every routing key routable (an unroutable event
            // blocks its document's later events) without growing without bound.
            let mut args = FieldTable::default();
            args.insert(
                "x-max-length".into(),
                AMQPValue::LongLongInt(ARCHIVE_MAX_LENGTH),
            );
            ch.queue_declare(
                q,
                QueueDeclareOptions {
                    durable: true,
                    ..Default::default()
                },
                args,
            )
            .await
            .context("amqp queue declare")?;
            ch.queue_bind(
                q,
                &self.exchange,
                "document.#",
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .context("amqp queue bind")?;
        }
        tracing::info!(exchange = %self.exchange, "connected to rabbitmq");
        Ok((conn, ch))
    }

    /// Publishes one persistent event and waits for the broker's confirm.
    pub async fn publish(
        &self,
        routing_key: &str,
        message_id: &str,
        event_type: &str,
        body: &[u8],
    ) -> Result<(), PublishError> {
        let sent = tokio::time::timeout(self.timeout, async {
            let ch = self.channel().await?;
            let props = BasicProperties::default()
                .with_delivery_mode(2)
                .with_content_type("application/json".into())
                .with_message_id(message_id.into())
                .with_type(event_type.into())
                .with_app_id("kh-review".into())
                .with_timestamp(chrono::Utc::now().timestamp() as u64);
            let options = BasicPublishOptions {
                mandatory: true,
                ..Default::default()
            };
            ch.basic_publish(&self.exchange, routing_key, options, body, props)
                .await
                .context("amqp publish")?
                .await
                .context("amqp confirm")
        })
        .await
        .map_err(|_| anyhow!("rabbitmq did not confirm within {:?}", self.timeout))
        .and_then(|r| r);
        let result = match sent {
            Err(e) => Err(PublishError::Unavailable(e)),
            Ok(Confirmation::Ack(None)) => Ok(()),
            Ok(Confirmation::Ack(Some(_))) => Err(PublishError::Refused(format!(
                "unroutable: no queue is bound to {} for {routing_key}",
                self.exchange
            ))),
            Ok(Confirmation::Nack(_)) => Err(PublishError::Refused(
                "broker refused the message (nack)".into(),
            )),
            Ok(Confirmation::NotRequested) => Err(PublishError::Unavailable(anyhow!(
                "channel is not in confirm mode"
            ))),
        };
        if let Err(PublishError::Unavailable(_)) = &result {
            // Start from a fresh connection next time, unless this one is still healthy.
            let mut live = self.live.lock().await;
            let healthy = live
                .as_ref()
                .is_some_and(|(c, ch)| c.status().connected() && ch.status().connected());
            if !healthy {
                *live = None;
            }
        }
        result
    }

    /// Whether a connection is open now (publishing would not have to connect first).
    pub async fn is_connected(&self) -> bool {
        self.live
            .lock()
            .await
            .as_ref()
            .is_some_and(|(c, ch)| c.status().connected() && ch.status().connected())
    }

    pub async fn ping(&self) -> anyhow::Result<()> {
        self.channel().await.map(|_| ())
    }

    pub async fn close(&self) {
        if let Some((conn, _)) = self.live.lock().await.take() {
            let _ = conn.close(200, "shutdown").await;
        }
    }
}
