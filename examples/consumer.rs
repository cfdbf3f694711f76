//! An example downstream consumer: binds a durable queue to the events exchange, prints each
//! event, acks only after processing, and skips duplicates by `event_id` (delivery is at
//! least once). Run: `cargo run --example consumer -- [queue] [max_events]`.
//!
//! A real consumer keeps the seen ids in its own store (with the work it did, in one
//! transaction); this one keeps them in memory.

use std::collections::HashSet;

use futures_util::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicQosOptions, ExchangeDeclareOptions,
    QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties, ExchangeKind};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // The first of the service's brokers (a comma-separated list).
    let urls = std::env::var("APP__AMQP__URLS")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into());
    let url = urls.split(',').next().unwrap_or_default().to_string();
    let exchange =
        std::env::var("APP__AMQP__EXCHANGE").unwrap_or_else(|_| "kh.document.events".into());
    let mut args = std::env::args().skip(1);
    let queue = args.next().unwrap_or_else(|| "example-indexer".into());
    let max: usize = args
        .next()
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(usize::MAX);

    let (conn, ch) = bind_queue(&url, &exchange, &queue).await?;
    ch.basic_qos(16, BasicQosOptions::default()).await?;
    let mut consumer = ch
        .basic_consume(
            queue.as_str().into(),
            "example-consumer".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    eprintln!("consuming from queue {queue} bound to {exchange}");
    let mut seen = HashSet::new();
    let mut handled = 0;
    while let Some(delivery) = consumer.next().await {
        let delivery = delivery?;
        let event: serde_json::Value = serde_json::from_slice(&delivery.data)?;
        let id = event["event_id"].as_str().unwrap_or_default().to_string();
        if seen.insert(id) {
            // Process here (chunk, embed, index). Print stands in for the work.
            println!("{event}");
        } else {
            eprintln!("duplicate {} skipped", event["event_id"]);
        }
        delivery.ack(BasicAckOptions::default()).await?;
        handled += 1;
        if handled >= max {
            break;
        }
    }
    conn.close(200, "done".into()).await?;
    Ok(())
}

/// Connects, declares the exchange and a durable queue, and binds it to the event types.
async fn bind_queue(
    url: &str,
    exchange: &str,
    queue: &str,
) -> anyhow::Result<(Connection, Channel)> {
    let conn = Connection::connect(url, ConnectionProperties::default()).await?;
    let ch = conn.create_channel().await?;
    ch.exchange_declare(
        exchange.into(),
        ExchangeKind::Topic,
        ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await?;
    ch.queue_declare(
        queue.into(),
        QueueDeclareOptions {
            durable: true,
            ..Default::default()
        },
        FieldTable::default(),
    )
    .await?;
    for key in [
        "document.submitted",
        "document.approved",
        "document.rejected",
    ] {
        ch.queue_bind(
            queue.into(),
            exchange.into(),
            key.into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
    }
    Ok((conn, ch))
}
