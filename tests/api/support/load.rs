//! A steady load for the failover and upgrade tests: each target (an instance, or a load
//! balancer in front of several) gets one review flow (create, submit, approve) started
//! every `every`, whatever the earlier flows are doing, so a store that fails over or an
//! instance being replaced meets requests at the same rate throughout. Every answer is
//! recorded, with its time and latency, so a test can say what the clients saw.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::{json, Value};

use super::app::TestApp;
use super::inspect::wait_for;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Create,
    Submit,
    Approve,
}

/// One answer the clients got.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub step: Step,
    pub document: Option<String>,
    pub status: u16,
    /// The error's `code`, when the answer is an error.
    pub code: Option<String>,
    /// When the answer came, and how long it took.
    pub at: Instant,
    pub took: Duration,
}

impl Outcome {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// How many approvals of the load have been answered 2xx so far: a fault waits for the
/// load to be well under way by this, not by the clock.
#[derive(Default)]
pub struct Progress(AtomicUsize);

impl Progress {
    /// Waits (at most a minute) until `n` approvals have succeeded.
    pub async fn approvals(&self, n: usize) {
        wait_for(
            &format!("{n} approvals"),
            Duration::from_secs(60),
            || async { (self.0.load(Ordering::Relaxed) >= n).then_some(()) },
        )
        .await
    }
}

/// Where a load's requests go: an instance's or a load balancer's address, with the
/// clients' tokens; `keyed` sends every POST with an `Idempotency-Key`, as a client that
/// may be retried (by itself or by a load balancer) does.
pub struct Target {
    pub base: String,
    client: reqwest::Client,
    author: String,
    reviewer: String,
    keyed: bool,
}

impl Target {
    /// `app` itself, without idempotency keys.
    pub fn app(app: &TestApp) -> Self {
        Self::at(app, app.address.clone(), false)
    }

    /// `base` (a load balancer in front of instances sharing `app`'s stores), with `app`'s
    /// tokens and client.
    pub fn at(app: &TestApp, base: String, keyed: bool) -> Self {
        Self {
            base,
            client: app.client.clone(),
            author: app.author(),
            reviewer: app.reviewer(),
            keyed,
        }
    }
}

/// Runs `apps[i]` flows every `every` for `length`, counting its approvals in `progress`;
/// returns every answer, in no order.
pub async fn steady_load(
    apps: &[&TestApp],
    length: Duration,
    every: Duration,
    progress: &Progress,
) -> Vec<Outcome> {
    let targets: Vec<Target> = apps.iter().map(|app| Target::app(app)).collect();
    steady_load_to(&targets, length, every, progress).await
}

/// [`steady_load`] to any targets.
pub async fn steady_load_to(
    targets: &[Target],
    length: Duration,
    every: Duration,
    progress: &Progress,
) -> Vec<Outcome> {
    let runs = targets
        .iter()
        .map(|target| one_target(target, length, every, progress));
    futures_util::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect()
}

async fn one_target(
    target: &Target,
    length: Duration,
    every: Duration,
    progress: &Progress,
) -> Vec<Outcome> {
    let end = Instant::now() + length;
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut flows = FuturesUnordered::new();
    let mut out = Vec::new();
    let mut n = 0u64;
    while Instant::now() < end {
        tokio::select! {
            _ = tick.tick() => {
                n += 1;
                flows.push(flow(target, n, progress));
            }
            Some(done) = flows.next() => out.extend(done),
        }
    }
    while let Some(done) = flows.next().await {
        out.extend(done);
    }
    out
}

/// Create, submit, approve: as far as the answers let it go.
async fn flow(target: &Target, n: u64, progress: &Progress) -> Vec<Outcome> {
    let mut out = Vec::new();
    let created = send(
        target,
        Step::Create,
        None,
        "/api/v1/documents",
        &target.author,
        json!({"title": format!("load {n}"), "body": format!("body of flow {n}")}),
    )
    .await;
    let Some(doc) = created
        .1
        .as_ref()
        .and_then(|v| v["id"].as_str())
        .map(str::to_string)
    else {
        out.push(created.0);
        return out;
    };
    out.push(Outcome {
        document: Some(doc.clone()),
        ..created.0
    });
    let path = format!("/api/v1/documents/{doc}/submit");
    let (submitted, body) = send(
        target,
        Step::Submit,
        Some(&doc),
        &path,
        &target.author,
        json!({}),
    )
    .await;
    out.push(submitted);
    let Some(review) = body.as_ref().and_then(|v| v["review"]["id"].as_str()) else {
        return out;
    };
    let path = format!("/api/v1/reviews/{review}/approve");
    let (approved, _) = send(
        target,
        Step::Approve,
        Some(&doc),
        &path,
        &target.reviewer,
        json!({}),
    )
    .await;
    if approved.ok() {
        progress.0.fetch_add(1, Ordering::Relaxed);
    }
    out.push(approved);
    out
}

/// One request; the JSON body when it succeeded. A request that got no answer at all is
/// status 0.
async fn send(
    target: &Target,
    step: Step,
    document: Option<&str>,
    path: &str,
    token: &str,
    body: Value,
) -> (Outcome, Option<Value>) {
    let mut request = target
        .client
        .post(format!("{}{path}", target.base))
        .bearer_auth(token)
        .json(&body);
    if target.keyed {
        request = request.header("idempotency-key", uuid::Uuid::new_v4().to_string());
    }
    let started = Instant::now();
    let sent = request.send().await;
    let outcome = |status: u16, code: Option<String>| Outcome {
        step,
        document: document.map(str::to_string),
        status,
        code,
        at: Instant::now(),
        took: started.elapsed(),
    };
    let Ok(r) = sent else {
        return (outcome(0, None), None);
    };
    let status = r.status().as_u16();
    let json: Option<Value> = r.json().await.ok();
    if (200..300).contains(&status) {
        (outcome(status, None), json)
    } else {
        let code = json
            .as_ref()
            .and_then(|v| v["code"].as_str())
            .map(str::to_string);
        (outcome(status, code), None)
    }
}

/// Counts of the answers by (step, status, code), for the test's printout.
pub fn tally(outcomes: &[Outcome]) -> String {
    let mut counts = std::collections::BTreeMap::new();
    for o in outcomes {
        let key = format!(
            "{:?} {} {}",
            o.step,
            o.status,
            o.code.as_deref().unwrap_or("")
        );
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
        .iter()
        .map(|(k, n)| format!("{}: {n}", k.trim_end()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// After a fault at `from`: when the first request that failed got its answer, and how
/// long after `from` the first success after that failure came (the outage the clients
/// saw). None when nothing failed.
pub fn outage(outcomes: &[Outcome], from: Instant) -> Option<(Duration, Option<Duration>)> {
    let after = || outcomes.iter().filter(|o| o.at > from);
    let failed = after().filter(|o| !o.ok()).map(|o| o.at).min()?;
    let back = after()
        .filter(|o| o.ok() && o.at > failed)
        .map(|o| o.at - from)
        .min();
    Some((failed - from, back))
}
