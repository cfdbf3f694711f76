//! RabbitMQ: a connection (failing loudly when the broker is missing), and an exchange with
//! a queue of its own, bound to every event of the service (`document.#`), per test or per
//! benchmark run.

use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Channel, Connection, ConnectionProperties, ExchangeKind};

use crate::stores::{amqp_url, unreachable};

/// A connection to the broker at `amqp_url()`.
pub async fn amqp_connection() -> anyhow::Result<Connection> {
    Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .map_err(|e| unreachable("RabbitMQ", e))
}

/// How long a queue lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lasting {
    /// Until the broker restarts (a test's queue, deleted at its teardown).
    Transient,
    /// Across broker restarts (the benchmark's, purged at its start).
    Durable,
    /// Durable and replicated over a cluster's nodes: a quorum queue.
    Quorum,
}

/// Declares the durable topic `exchange` the service publishes to, and `queue`, bound to
/// every routing key of the service's events on it.
pub async fn declare_exchange_and_queue(
    ch: &Channel,
    exchange: &str,
    queue: &str,
    lasting: Lasting,
) -> lapin::Result<()> {
    let durable = ExchangeDeclareOptions {
        durable: true,
        ..Default::default()
    };
    ch.exchange_declare(
        exchange.into(),
        ExchangeKind::Topic,
        durable,
        FieldTable::default(),
    )
    .await?;
    let options = QueueDeclareOptions {
        durable: lasting != Lasting::Transient,
        ..Default::default()
    };
    let mut args = FieldTable::default();
    if lasting == Lasting::Quorum {
        args.insert(
            "x-queue-type".into(),
            AMQPValue::LongString("quorum".into()),
        );
    }
    ch.queue_declare(queue.into(), options, args).await?;
    let bind = QueueBindOptions::default();
    ch.queue_bind(
        queue.into(),
        exchange.into(),
        "#".into(),
        bind,
        FieldTable::default(),
    )
    .await
}
