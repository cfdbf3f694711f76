//! The replays' own connection to the broker, apart from the live publisher's: a replay's
//! batches and their confirms never queue behind or ahead of live events on one socket or
//! channel. Messages go to one queue through the default exchange (exchange "", routing
//! key = the queue's name), mandatory: a queue that is gone returns them.

use std::time::Duration;

use anyhow::{anyhow, Context};
use futures_util::future::join_all;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Confirmation, Connection, ConnectionProperties, ErrorKind};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::Mutex;

use super::message::Outgoing;
use crate::outbox::nodes::Nodes;
use crate::outbox::AmqpSettings;

/// AMQP reply code 404: no such queue (the answer to a passive declare).
const NOT_FOUND: u16 = 404;

/// Why a batch was not sent.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The broker took the messages and returned or refused some: the target queue is gone,
    /// or refuses them. The replay cannot go on.
    #[error("{0}")]
    Refused(String),
    /// The broker is unreachable or did not confirm in time: the batch is sent again.
    #[error("{0:#}")]
    Unavailable(anyhow::Error),
}

pub struct ReplayChannel {
    nodes: Nodes,
    timeout: Duration,
    live: Mutex<Option<(Connection, Channel)>>,
}

impl ReplayChannel {
    /// The replays' connection to the nodes of `[amqp]`; does not connect.
    pub fn from_settings(settings: &AmqpSettings) -> Self {
        Self {
            nodes: Nodes::new(settings.urls.clone(), settings.connect_timeout),
            timeout: settings.timeout,
            live: Mutex::new(None),
        }
    }

    /// The confirm-mode channel, or (`side`) a new plain channel of the same connection,
    /// (re)connecting when needed.
    async fn open(&self, side: bool) -> anyhow::Result<Channel> {
        let mut live = self.live.lock().await;
        let healthy = live
            .as_ref()
            .is_some_and(|(conn, ch)| conn.status().connected() && ch.status().connected());
        if !healthy {
            *live = None;
            *live = Some(self.connect_any().await?);
        }
        let (conn, ch) = live.as_ref().expect("connected above");
        if side {
            return conn.create_channel().await.context("amqp channel");
        }
        Ok(ch.clone())
    }

    /// The first node that answers (see [`Nodes`]), all within the timeout.
    async fn connect_any(&self) -> anyhow::Result<(Connection, Channel)> {
        let opened = self
            .nodes
            .connect_any(self.timeout, |url| async move { Self::connect(&url).await })
            .await?;
        Ok(opened.value)
    }

    async fn connect(url: &SecretString) -> anyhow::Result<(Connection, Channel)> {
        let props = ConnectionProperties::default().with_connection_name("kh-review-replay".into());
        let conn = Connection::connect(url.expose_secret(), props)
            .await
            .context("amqp connect")?;
        let ch = conn.create_channel().await.context("amqp channel")?;
        ch.confirm_select(ConfirmSelectOptions::default())
            .await
            .context("amqp confirm mode")?;
        Ok((conn, ch))
    }

    /// Whether `queue` exists (a passive declare, on a channel of its own: the broker closes
    /// the channel that asks for a queue that does not exist).
    pub async fn queue_exists(&self, queue: &str) -> anyhow::Result<bool> {
        tokio::time::timeout(self.timeout, self.passive_declare(queue))
            .await
            .map_err(|_| anyhow!("rabbitmq did not answer within {:?}", self.timeout))?
    }

    async fn passive_declare(&self, queue: &str) -> anyhow::Result<bool> {
        let ch = self.open(true).await?;
        let passive = QueueDeclareOptions {
            passive: true,
            ..Default::default()
        };
        let found = ch
            .queue_declare(queue.into(), passive, FieldTable::default())
            .await;
        match found {
            Ok(_) => {
                let _ = ch.close(200, "done".into()).await;
                Ok(true)
            }
            Err(e) if matches!(e.kind(), ErrorKind::ProtocolError(p) if p.get_id() == NOT_FOUND) => {
                Ok(false)
            }
            Err(e) => Err(anyhow::Error::new(e).context("amqp queue declare (passive)")),
        }
    }

    /// Publishes `batch` to `queue`, all at once on the confirm channel, and waits for
    /// every confirm.
    pub async fn send(&self, queue: &str, batch: &[Outgoing]) -> Result<(), SendError> {
        let bound = self.timeout * 2;
        let sent = tokio::time::timeout(bound, self.publish_all(queue, batch)).await;
        let confirms = match sent {
            Err(_) => Err(anyhow!("rabbitmq did not confirm within {bound:?}")),
            Ok(r) => r,
        };
        let confirms = match confirms {
            Ok(c) => c,
            Err(e) => {
                *self.live.lock().await = None;
                return Err(SendError::Unavailable(e));
            }
        };
        for confirmation in confirms {
            match confirmation {
                Confirmation::Ack(None) => {}
                Confirmation::Ack(Some(_)) => {
                    return Err(SendError::Refused(format!(
                        "the target queue {queue} no longer exists (the message was returned)"
                    )))
                }
                Confirmation::Nack(_) => {
                    return Err(SendError::Refused(format!(
                        "the broker refused a message for {queue} (nack)"
                    )))
                }
                Confirmation::NotRequested => {
                    return Err(SendError::Unavailable(anyhow!(
                        "channel is not in confirm mode"
                    )))
                }
            }
        }
        Ok(())
    }

    async fn publish_all(
        &self,
        queue: &str,
        batch: &[Outgoing],
    ) -> anyhow::Result<Vec<Confirmation>> {
        let ch = self.open(false).await?;
        let options = BasicPublishOptions {
            mandatory: true,
            ..Default::default()
        };
        let mut pending = Vec::with_capacity(batch.len());
        for m in batch {
            let confirm = ch
                .basic_publish(
                    "".into(),
                    queue.into(),
                    options,
                    &m.body,
                    m.properties.clone(),
                )
                .await
                .context("amqp publish")?;
            pending.push(confirm);
        }
        let mut out = Vec::with_capacity(pending.len());
        for c in join_all(pending).await {
            out.push(c.context("amqp confirm")?);
        }
        Ok(out)
    }

    pub async fn close(&self) {
        if let Some((conn, _)) = self.live.lock().await.take() {
            // bounded: a silent node never answers the close
            let closing = conn.close(200, "shutdown".into());
            let _ = tokio::time::timeout(self.timeout, closing).await;
        }
    }
}
