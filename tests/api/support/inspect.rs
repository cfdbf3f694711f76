//! What a test reads back from the real stores: rows, lock keys, events, projections; and
//! waiting on a condition with a deadline (never a bare sleep).

use std::time::{Duration, Instant};

use lapin::options::BasicGetOptions;
use reqwest::{Response, StatusCode};
use serde_json::Value;

use kh_review::web::test_hooks::SUSPEND_RENEWAL_HEADER;
use serde_json::json;

use super::app::TestApp;
use super::events::conforming;

/// Waits for `check` to return Some, polling, until `deadline`; panics with `what`.
pub async fn wait_for<T, F, Fut>(what: &str, deadline: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    poll_until(deadline, check)
        .await
        .unwrap_or_else(|| panic!("timed out after {deadline:?} waiting for {what}"))
}

/// Polls `check` until it returns Some or `deadline` passes (then None).
pub async fn poll_until<T, F, Fut>(deadline: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    // The one place tests poll: every 25 ms until the condition holds or the deadline passes.
    let end = Instant::now() + deadline;
    let mut every = tokio::time::interval(Duration::from_millis(25));
    loop {
        every.tick().await;
        if let Some(v) = check().await {
            return Some(v);
        }
        if Instant::now() >= end {
            return None;
        }
    }
}

/// Every migration of the build whose migrations are in the folder `migrations` applied,
/// each once, on the database `db` reaches (and no other).
pub async fn each_migration_applied_once<'c>(
    db: impl sqlx::PgExecutor<'c>,
    migrations: &std::path::Path,
) {
    let files = std::fs::read_dir(migrations).unwrap().count() as i64;
    let (applied, versions): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(DISTINCT version) FROM _sqlx_migrations WHERE success",
    )
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(
        (applied, versions),
        (files, files),
        "every migration applied, once"
    );
}

/// GET on `client`'s Redis.
pub async fn redis_get(client: &redis::Client, key: &str) -> Option<String> {
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("GET")
        .arg(key)
        .query_async(&mut c)
        .await
        .unwrap()
}

pub async fn redis_cmd(client: &redis::Client, args: &[&str]) {
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    let _: redis::Value = cmd.query_async(&mut c).await.unwrap();
}

/// Reads an error body and checks its envelope.
pub async fn expect_error(r: Response, status: StatusCode, code: &str) -> Value {
    assert_eq!(r.status(), status, "unexpected status");
    let rid = r
        .headers()
        .get("x-request-id")
        .map(|v| v.to_str().unwrap().to_string());
    let v: Value = r.json().await.expect("error body is JSON");
    assert_eq!(v["code"], code, "body: {v}");
    assert!(
        v["message"].as_str().is_some_and(|m| !m.is_empty()),
        "body: {v}"
    );
    assert_eq!(
        v["request_id"].as_str().map(str::to_string),
        rid,
        "body: {v}"
    );
    v
}

impl TestApp {
    /// An approve that pauses at `header` for `ms`, optionally with renewal suspended.
    pub fn approve_paused(
        &self,
        review_id: &str,
        header: &'static str,
        ms: u64,
        frozen: bool,
    ) -> reqwest::RequestBuilder {
        let mut rb = self
            .client
            .post(self.url(&format!("/api/v1/reviews/{review_id}/approve")))
            .bearer_auth(self.reviewer())
            .header(header, ms.to_string())
            .json(&json!({}));
        if frozen {
            rb = rb.header(SUSPEND_RENEWAL_HEADER, "true");
        }
        rb
    }

    pub fn lock_key_review(&self, review_id: &str) -> String {
        format!("{}lock:doc:review:{{{review_id}}}", self.shared.prefix)
    }

    pub async fn redis_conn(&self) -> redis::aio::MultiplexedConnection {
        self.redis.get_multiplexed_async_connection().await.unwrap()
    }

    /// Lock keys (not fence counters) left under this test's prefix.
    pub async fn lock_keys_left(&self) -> Vec<String> {
        let mut c = self.redis_conn().await;
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}lock:*", self.shared.prefix))
            .query_async(&mut c)
            .await
            .unwrap();
        keys.into_iter()
            .filter(|k| !k.ends_with(":fence"))
            .collect()
    }

    /// The lock that guarded the approval of `review_id` (`redis` or `row_lock_only`).
    pub async fn approval_lock_mode(&self, review_id: &str) -> String {
        sqlx::query_scalar(
            "SELECT lock_mode FROM audit_log WHERE review_id = $1::uuid AND action = 'approve'",
        )
        .bind(review_id)
        .fetch_one(&self.pg)
        .await
        .unwrap()
    }

    /// The value of the metric line `name` (exactly, labels included) on `/metrics`; None
    /// when the service does not export it.
    pub async fn metric(&self, name: &str) -> Option<f64> {
        self.try_metric(name).await.unwrap()
    }

    /// [`TestApp::metric`], with the request's failure (the instance stopped) as an error.
    pub async fn try_metric(&self, name: &str) -> reqwest::Result<Option<f64>> {
        let r = self.client.get(self.url("/metrics")).send().await?;
        let text = r.text().await?;
        let prefix = format!("{name} ");
        Ok(text
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .map(|v| v.trim().parse().unwrap()))
    }

    /// The number a counting query of the test's own answers.
    pub async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(&self.pg)
            .await
            .unwrap()
    }

    /// A review's status as PostgreSQL holds it.
    pub async fn review_status_in_db(&self, review_id: &str) -> String {
        sqlx::query_scalar("SELECT status FROM reviews WHERE id = $1::uuid")
            .bind(review_id)
            .fetch_one(&self.pg)
            .await
            .unwrap()
    }

    /// A document's version as PostgreSQL holds it.
    pub async fn document_version_in_db(&self, document_id: &str) -> i64 {
        sqlx::query_scalar("SELECT version FROM documents WHERE id = $1::uuid")
            .bind(document_id)
            .fetch_one(&self.pg)
            .await
            .unwrap()
    }

    /// Outbox rows not delivered yet.
    pub async fn undelivered(&self) -> i64 {
        self.count("SELECT count(*) FROM outbox WHERE done_at IS NULL")
            .await
    }

    /// Waits until every outbox row's projection is written (its event may still wait).
    pub async fn outbox_projected(&self, deadline: Duration) {
        wait_for("every event to be projected", deadline, || async {
            let left = self
                .count("SELECT count(*) FROM outbox WHERE done_at IS NULL AND projected_at IS NULL")
                .await;
            (left == 0).then_some(())
        })
        .await
    }

    /// Waits until the outbox is fully delivered.
    pub async fn outbox_drained(&self, deadline: Duration) {
        wait_for("the outbox to drain", deadline, || async {
            (self.undelivered().await == 0).then_some(())
        })
        .await
    }

    /// Takes every event now on this test's queue (in order), each checked against
    /// `/asyncapi.json` (`support::events`).
    pub async fn take_events(&self) -> Vec<(Value, lapin::BasicProperties)> {
        let mut out = Vec::new();
        while let Some(m) = self
            .amqp
            .basic_get(
                self.shared.queue.as_str().into(),
                BasicGetOptions { no_ack: true },
            )
            .await
            .unwrap()
        {
            let props = m.delivery.properties.clone();
            out.push((conforming(&self.settings, &m.delivery.data, &props), props));
        }
        out
    }

    /// As [`Self::take_events`], during a rolling upgrade from a release older than spaces:
    /// a message without `ce-khspace` (one an instance of that release published, with or
    /// without `space` in its body, whichever release wrote its row: docs/events.md allows
    /// it while the upgrade runs) is taken without the contract's check, and counted.
    pub async fn take_events_upgrading_to_spaces(&self) -> (Vec<lapin::BasicProperties>, usize) {
        let (mut out, mut older) = (Vec::new(), 0);
        while let Some(m) = self
            .amqp
            .basic_get(
                self.shared.queue.as_str().into(),
                BasicGetOptions { no_ack: true },
            )
            .await
            .unwrap()
        {
            let props = m.delivery.properties.clone();
            let body: Value = serde_json::from_slice(&m.delivery.data).expect("a JSON body");
            let header = props
                .headers()
                .as_ref()
                .is_some_and(|h| h.inner().contains_key("ce-khspace"));
            if !header || body.get("space").is_none() {
                older += 1;
            } else {
                conforming(&self.settings, &m.delivery.data, &props);
            }
            out.push(props);
        }
        (out, older)
    }

    /// Waits until `n` events have arrived in total and returns them.
    pub async fn wait_events(&self, n: usize, deadline: Duration) -> Vec<Value> {
        let got = std::cell::RefCell::new(Vec::new());
        wait_for(&format!("{n} events"), deadline, || async {
            let more = self.take_events().await;
            let mut got = got.borrow_mut();
            got.extend(more.into_iter().map(|(v, _)| v));
            (got.len() >= n).then_some(())
        })
        .await;
        got.into_inner()
    }

    pub async fn mongo_doc(&self, id: &str) -> Option<mongodb::bson::Document> {
        self.mongo
            .collection::<mongodb::bson::Document>("documents")
            .find_one(mongodb::bson::doc! {"_id": id})
            .await
            .unwrap()
    }
}
