//! Round trips per approval, by store: the service (over HTTP, an instance of its own whose
//! stores are reached through counting proxies, dispatcher off so that every event goes out
//! from its request) and the two floors through the same proxies; and the service's per
//! comment (a reviewer's, on a pending review, naming it) and per claim (its reviewer's seat
//! on it). Counted on the wire ([`Turns`]), not from the code: what the clients really send.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;

use super::floor::{Floor, Statements};
use super::revise::Stage;
use super::turns::{host_port, through, Turns};
use super::{approve_each, drive, sized, BenchEnv, Report, Service};

/// Round trips per approval to each store.
#[derive(Debug, Clone, Copy, Default)]
pub struct PerStore {
    pub pg: f64,
    pub redis: f64,
    pub mongo: f64,
    pub amqp: f64,
}

/// The round trips of the service and of the two floors.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundTrips {
    pub service: PerStore,
    pub floor_old: PerStore,
    pub floor_new: PerStore,
}

/// The four counting proxies.
struct Proxies {
    pg: Turns,
    redis: Turns,
    mongo: Turns,
    amqp: Turns,
}

impl Proxies {
    async fn start(env: &BenchEnv) -> anyhow::Result<Self> {
        Ok(Self {
            pg: Turns::start(host_port(&env.pg_url)?).await?,
            redis: Turns::start(host_port(&env.redis_url)?).await?,
            mongo: Turns::start(host_port(&env.mongo_url)?).await?,
            amqp: Turns::start(host_port(&env.amqp_url)?).await?,
        })
    }

    fn sample(&self) -> [u64; 4] {
        [
            self.pg.count(),
            self.redis.count(),
            self.mongo.count(),
            self.amqp.count(),
        ]
    }

    fn per(&self, before: [u64; 4], n: usize) -> PerStore {
        let after = self.sample();
        let d = |i: usize| (after[i] - before[i]) as f64 / n as f64;
        PerStore {
            pg: d(0),
            redis: d(1),
            mongo: d(2),
            amqp: d(3),
        }
    }
}

/// Approvals counted (as many warm the pools first), `CONC` at a time.
fn approvals() -> usize {
    sized(480, 32)
}
const CONC: usize = 16;

pub async fn round_trip_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<RoundTrips> {
    let proxies = Proxies::start(env).await?;
    let (service, others) = service_turns(env, &proxies).await?;
    let floor_old = floor_turns(env, &proxies, Statements::Old).await?;
    let floor_new = floor_turns(env, &proxies, Statements::New).await?;
    let line = |name: &str, p: &PerStore| {
        format!(
            "round trips per approval, {name}: PostgreSQL {:.2}, Redis {:.2}, MongoDB {:.2}, RabbitMQ {:.2}",
            p.pg, p.redis, p.mongo, p.amqp
        )
    };
    report.note(format!(
        "{} ({} approvals at concurrency {CONC}, counted on the wire: a round trip is the client sending after the server answered)",
        line("service over HTTP", &service),
        approvals()
    ));
    let per = |what: &str, p: &PerStore, how: &str| {
        format!(
            "round trips per {what}, service over HTTP: PostgreSQL {:.2}, Redis {:.2}, MongoDB {:.2}, RabbitMQ {:.2} \
             ({} {what}s at concurrency {CONC}, {how})",
            p.pg, p.redis, p.mongo, p.amqp, approvals()
        )
    };
    report.note(per(
        "comment",
        &others.comment,
        "each a reviewer's on a pending review, naming it",
    ));
    report.note(per(
        "claim",
        &others.claim,
        "each a reviewer's seat on a pending review",
    ));
    report.note(line(
        "floor, old statements (one per row, marks one by one)",
        &floor_old,
    ));
    report.note(line(
        "floor, new statements (combined write, grouped marks)",
        &floor_new,
    ));
    Ok(RoundTrips {
        service,
        floor_old,
        floor_new,
    })
}

/// The service's round trips, its background loops off: per approval, then per comment
/// and per claim.
async fn service_turns(env: &BenchEnv, proxies: &Proxies) -> anyhow::Result<(PerStore, Others)> {
    let extra = [
        ("APP__OUTBOX__RUN_DISPATCHER", "false".to_string()),
        ("APP__REPLAY__RUN", "false".to_string()),
        (
            "APP__DATABASE__URL",
            through(&env.service_pg_url, &proxies.pg)?,
        ),
        (
            "APP__DATABASE__MIGRATE_URL",
            through(&env.pg_url, &proxies.pg)?,
        ),
        ("APP__REDIS__URL", through(&env.redis_url, &proxies.redis)?),
        ("APP__MONGO__URL", through(&env.mongo_url, &proxies.mongo)?),
        ("APP__AMQP__URLS", through(&env.amqp_url, &proxies.amqp)?),
    ];
    let svc = env.spawn_service("round-trips", &extra).await?;
    // The pool grown to its steady size first: a new connection's handshake is not an
    // approval's.
    let n = approvals();
    let warm = env.make_pending(n).await?;
    anyhow::ensure!(approve_each(env, &svc, CONC, warm).await?.errors == 0);
    env.expect_delivered(n).await?;
    let reviews = env.make_pending(n).await?;
    let before = proxies.sample();
    let f = approve_each(env, &svc, CONC, reviews).await?;
    anyhow::ensure!(f.errors == 0, "{} approvals failed", f.errors);
    env.expect_delivered(n).await?;
    let approval = proxies.per(before, n);
    let others = other_turns(env, proxies, &svc, n).await?;
    Ok((approval, others))
}

/// Round trips per comment and per claim.
struct Others {
    comment: PerStore,
    claim: PerStore,
}

/// A comment on each of `n` documents pending review (made through the API beforehand,
/// uncounted), then a claim of each review, by its reviewer; then their approvals, so that
/// none stays pending for the rows after these.
async fn other_turns(
    env: &BenchEnv,
    proxies: &Proxies,
    svc: &Service,
    n: usize,
) -> anyhow::Result<Others> {
    let w = env.writer(svc);
    let made = Arc::new(env.documents_at(&w, Stage::Pending, n).await?);
    let (who, list) = (w.reviewer.clone(), made.clone());
    let before = proxies.sample();
    let f = drive(CONC, n, move |i| {
        let (who, list) = (who.clone(), list.clone());
        async move {
            let (doc, review) = list[i];
            let body = json!({"body": "Counted.", "review_id": review});
            let path = format!("/api/v1/documents/{doc}/comments");
            let (status, _) = who.send(Method::POST, &path, &body).await?;
            anyhow::Ok(status == StatusCode::CREATED)
        }
    })
    .await?;
    anyhow::ensure!(f.errors == 0, "{} comments failed", f.errors);
    env.expect_delivered(n).await?;
    let comment = proxies.per(before, n);
    let (who, list) = (w.reviewer.clone(), made.clone());
    let before = proxies.sample();
    let f = drive(CONC, n, move |i| {
        let (who, list) = (who.clone(), list.clone());
        async move { who.claim(list[i].1).await }
    })
    .await?;
    anyhow::ensure!(f.errors == 0, "{} claims failed", f.errors);
    let claim = proxies.per(before, n);
    let reviews = made.iter().map(|(_, r)| *r).collect();
    anyhow::ensure!(approve_each(env, svc, CONC, reviews).await?.errors == 0);
    env.expect_delivered(n).await?;
    Ok(Others { comment, claim })
}

/// A floor's round trips, its clients through the proxies.
async fn floor_turns(
    env: &BenchEnv,
    proxies: &Proxies,
    statements: Statements,
) -> anyhow::Result<PerStore> {
    let mut settings = env.settings.clone();
    let secret = |s: String| SecretString::from(s);
    settings.database.url = secret(through(settings.database.url.expose_secret(), &proxies.pg)?);
    settings.mongo.url = secret(through(settings.mongo.url.expose_secret(), &proxies.mongo)?);
    settings.amqp.urls = vec![secret(through(&env.amqp_url, &proxies.amqp)?)];
    let floor: Arc<Floor> = Floor::new(&settings, statements).await?;
    let n = approvals();
    env.floor_with(&floor, CONC, n, || ()).await?; // warm: the pool at its size
    let mut before = [0; 4];
    env.floor_with(&floor, CONC, n, || before = proxies.sample())
        .await?;
    Ok(proxies.per(before, n))
}
