//! The floor of an outbox drain: confirmed publishes straight to the broker, pipelined in
//! batches of the dispatcher's batch size, with no outbox and no service.

use std::time::Instant;

use futures_util::future::try_join_all;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::Confirmation;
use lapin::{BasicProperties, Channel};

use super::drain::DrainCpu;
use super::{names, BenchEnv};

impl BenchEnv {
    /// Publishes `n` persistent, mandatory events with confirms; returns events per second,
    /// and the CPU per event of this process and of RabbitMQ.
    pub async fn raw_publish_rate(&self, n: usize) -> anyhow::Result<(f64, DrainCpu)> {
        let ch = self.amqp_conn().create_channel().await?;
        ch.confirm_select(ConfirmSelectOptions::default()).await?;
        let body = serde_json::to_vec(&serde_json::json!({
            "event_type": "document.approved", "document_version": 3, "data": {}
        }))?;
        // The dispatcher's batch size (`outbox.batch_size`).
        let per_batch = usize::try_from(self.settings.outbox.batch_size)?;
        let cpu = DrainCpu::now(self, None);
        let started = Instant::now();
        for batch in 0..n.div_ceil(per_batch) {
            let size = per_batch.min(n - batch * per_batch);
            let props = BasicProperties::default().with_delivery_mode(2);
            let confirms = (0..size).map(|_| publish_confirmed(&ch, &body, props.clone()));
            try_join_all(confirms).await?;
        }
        let rate = n as f64 / started.elapsed().as_secs_f64();
        let cpu = DrainCpu::now(self, None).per_event(&cpu, n);
        self.expect_queue(n).await?;
        let _ = ch.close(200, "done".into()).await;
        Ok((rate, cpu))
    }
}

/// Publishes one persistent, mandatory `document.approved` event to the benchmark's
/// exchange and waits for the broker's confirm (unroutable or nacked is an error).
pub async fn publish_confirmed(
    ch: &Channel,
    body: &[u8],
    props: BasicProperties,
) -> anyhow::Result<()> {
    let options = BasicPublishOptions {
        mandatory: true,
        ..Default::default()
    };
    let confirm = ch
        .basic_publish(
            names().exchange.as_str().into(),
            "document.approved".into(),
            options,
            body,
            props,
        )
        .await?
        .await?;
    anyhow::ensure!(
        matches!(confirm, Confirmation::Ack(None)),
        "publish not confirmed"
    );
    Ok(())
}
