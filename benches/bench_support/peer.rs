//! `make bench-peer` (`KH_BENCH_ONLY=peer`): kh-review side by side with a plain Python
//! build of the design it started from (`benches/peer/app.py`: FastAPI under uvicorn, a
//! redis.asyncio lock with SET NX PX and a Lua release, an asyncpg `SELECT ... FOR UPDATE`
//! transaction, a pymongo update, an aio-pika publish with confirms; no outbox, audit,
//! idempotency or fencing), on the same stores, under the same `wrk` load of approvals, at
//! 16 and 64 connections, in alternating rounds. Both saturate this machine, so the ratio
//! is set by the CPU all processes spend per approval: printed per process beside it.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kh_review_testkit::amqp::{declare_exchange_and_queue, Lasting};
use kh_review_testkit::database::{create_database, drop_database};
use kh_review_testkit::stores::mongo_database;
use lapin::options::QueuePurgeOptions;
use lapin::Channel;
use mongodb::bson::doc;
use secrecy::ExposeSecret;
use sqlx::PgPool;
use uuid::Uuid;

use super::cost::{tree_cpu_seconds, Stores, StoresCpu};
use super::wrk::wrk_approvals;
use super::{interleaved, names, sized, BenchEnv, Figures, Measure, Report, Service};

/// The peer's schema (its own database).
const SCHEMA: &str = include_str!("../peer/schema.sql");
/// The peer's exchange, and a queue bound to it (its publishes are mandatory).
const EXCHANGE: &str = "kh.bench-peer.events";
const QUEUE: &str = "kh-bench-peer.events";

/// The connections of the two rows, and how long a round drives them.
const CONNECTIONS: [usize; 2] = [16, 64];
fn round_time() -> Duration {
    Duration::from_secs(sized(10, 1))
}
/// Pending reviews made for each round: more than a round can approve at 1,000 a second.
fn supply() -> usize {
    sized(12_000, 1_500)
}

/// The peer's process (uvicorn and its workers, one process group) and its stores.
struct Peer {
    child: Child,
    base: String,
    pg: PgPool,
    mongo: mongodb::Collection<mongodb::bson::Document>,
    amqp: Channel,
}

impl Peer {
    async fn start(env: &BenchEnv) -> anyhow::Result<Self> {
        let python = std::env::var("KH_PEER_PYTHON").map_err(|_| {
            anyhow::anyhow!(
                "KH_PEER_PYTHON is not set: run `make bench-peer` (scripts/peer_venv.sh)"
            )
        })?;
        let db = format!("{}_peer", names().db);
        drop_database(&db).await?;
        let url = create_database(&db, None).await?;
        let pg = PgPool::connect(&url).await?;
        sqlx::raw_sql(SCHEMA).execute(&pg).await?;
        let mongo = mongo_database(&db).await?;
        mongo.drop().await?;
        let amqp = env.amqp_conn().create_channel().await?;
        declare_exchange_and_queue(&amqp, EXCHANGE, QUEUE, Lasting::Durable).await?;
        amqp.queue_purge(QUEUE.into(), QueuePurgeOptions::default())
            .await?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let workers = std::env::var("KH_PEER_WORKERS").unwrap_or_else(|_| "2".into());
        let child = Command::new(python)
            .args(["-m", "uvicorn", "--app-dir"])
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peer"))
            .args([
                "app:app",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .args([
                "--workers",
                &workers,
                "--loop",
                "uvloop",
                "--http",
                "httptools",
            ])
            .args(["--no-access-log", "--log-level", "warning"])
            .env("PEER_PG_URL", &url)
            .env("PEER_REDIS_URL", &env.redis_url)
            .env("PEER_MONGO_URL", &env.mongo_url)
            .env("PEER_MONGO_DB", &db)
            .env("PEER_AMQP_URL", &env.amqp_url)
            .env("PEER_EXCHANGE", EXCHANGE)
            .env(
                "PEER_JWT_SECRET",
                env.settings.auth.jwt_secret.expose_secret(),
            )
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()?;
        let peer = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            pg,
            mongo: mongo.collection("documents"),
            amqp,
        };
        peer.ready(env).await?;
        Ok(peer)
    }

    /// Waits until the peer answers. A worker accepts once its pools are made; one still
    /// starting takes no request meanwhile, and the warm-up round runs before any figure.
    async fn ready(&self, env: &BenchEnv) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match env.http.get(format!("{}/health", self.base)).send().await {
                Ok(r) if r.status().is_success() => return Ok(()),
                _ => anyhow::ensure!(Instant::now() < deadline, "the peer did not become ready"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `n` documents pending review, each with its pending review (and its MongoDB
    /// projection); the reviews' ids.
    async fn make_pending(&self, n: usize) -> anyhow::Result<Vec<Uuid>> {
        let docs: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
        let reviews: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
        let mut tx = self.pg.begin().await?;
        sqlx::query(
            "INSERT INTO documents (id, title, body, author_id, status, version) \
             SELECT unnest($1::uuid[]), 'Benchmark document', 'Body', 'bench-author', \
                    'PENDING_REVIEW', 2",
        )
        .bind(&docs)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO reviews (id, document_id, status, submitted_by) \
             SELECT r, d, 'PENDING', 'bench-author' FROM unnest($1::uuid[], $2::uuid[]) AS t(r, d)",
        )
        .bind(&reviews)
        .bind(&docs)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let projections: Vec<_> = docs
            .iter()
            .map(|d| doc! {"_id": d.to_string(), "title": "Benchmark document", "status": "PENDING_REVIEW", "version": 2})
            .collect();
        for batch in projections.chunks(1000) {
            self.mongo.insert_many(batch.to_vec()).await?;
        }
        Ok(reviews)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // The group: uvicorn and its workers. After `--`, so that `-<pid>` is read as a
        // group, never as a signal (an unparsed `-1` would be every process there is).
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let _ = self.child.wait();
    }
}

/// CPU milliseconds per approval of one round, by process.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    server: f64,
    postgres: f64,
    ferretdb: f64,
    rabbitmq: f64,
    redis: f64,
}

impl Cpu {
    fn total(&self) -> f64 {
        self.server + self.postgres + self.ferretdb + self.rabbitmq + self.redis
    }

    /// Field-wise median of rounds.
    fn median(all: &[Cpu]) -> Cpu {
        let med = |f: fn(&Cpu) -> f64| {
            let mut v: Vec<f64> = all.iter().map(f).collect();
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        };
        Cpu {
            server: med(|c| c.server),
            postgres: med(|c| c.postgres),
            ferretdb: med(|c| c.ferretdb),
            rabbitmq: med(|c| c.rabbitmq),
            redis: med(|c| c.redis),
        }
    }

    fn line(&self) -> String {
        format!(
            "server {:.3} ms, PostgreSQL {:.3}, FerretDB {:.3}, RabbitMQ {:.3}, Redis {:.3}: total {:.3} ms",
            self.server,
            self.postgres,
            self.ferretdb,
            self.rabbitmq,
            self.redis,
            self.total()
        )
    }
}

/// One side of the comparison: where it listens, its server's process, how it makes
/// pending reviews, and the queue its events land on (emptied after each round).
#[derive(Clone, Copy)]
enum Side<'a> {
    Kh(&'a Service),
    Peer(&'a Peer),
}

impl Side<'_> {
    async fn round(
        self,
        env: &BenchEnv,
        conc: usize,
        cpus: &Mutex<Vec<Cpu>>,
    ) -> anyhow::Result<Figures> {
        let (base, pid) = match self {
            Side::Kh(svc) => (svc.base.as_str(), svc.pid()),
            Side::Peer(peer) => (peer.base.as_str(), peer.pid()),
        };
        let ids = match self {
            Side::Kh(_) => env.make_pending(supply()).await?,
            Side::Peer(peer) => peer.make_pending(supply()).await?,
        };
        let stores = Stores::of(&env.amqp_url, &env.mongo_url);
        let (server0, stores0) = (tree_cpu_seconds(pid), StoresCpu::now(stores));
        let f = wrk_approvals(base, &ids, &env.reviewer_token, conc, round_time()).await?;
        let (server1, stores1) = (tree_cpu_seconds(pid), StoresCpu::now(stores));
        let per = |a: f64, b: f64| (b - a) * 1000.0 / f.ops as f64;
        cpus.lock().unwrap().push(Cpu {
            server: per(server0, server1),
            postgres: per(stores0.postgres, stores1.postgres),
            ferretdb: per(stores0.ferretdb, stores1.ferretdb),
            rabbitmq: per(stores0.rabbitmq, stores1.rabbitmq),
            redis: per(stores0.redis, stores1.redis),
        });
        match self {
            Side::Kh(_) => env.purge_queue().await?,
            Side::Peer(peer) => {
                peer.amqp
                    .queue_purge(QUEUE.into(), QueuePurgeOptions::default())
                    .await?;
            }
        }
        Ok(f)
    }
}

/// The rows: each side at 16 and 64 connections, its CPU per approval by process, and
/// kh-review's throughput ÷ the peer's (goal ≥ 1.5x at both); returns the lower ratio.
pub async fn peer_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<f64> {
    let svc = env.spawn_service("peer-kh", &[]).await?;
    let peer = Peer::start(env).await?;
    let sides = [
        ("kh-review", Side::Kh(&svc)),
        ("the peer", Side::Peer(&peer)),
    ];
    let mut cpus = Vec::new();
    let mut measures: Vec<Measure> = Vec::new();
    for conc in CONNECTIONS {
        for (_, side) in sides {
            let rounds = Arc::new(Mutex::new(Vec::new()));
            cpus.push(rounds.clone());
            measures.push(Box::new(move || {
                let rounds = rounds.clone();
                Box::pin(async move { side.round(env, conc, &rounds).await })
            }));
        }
    }
    let figures = interleaved(measures).await?;
    let mut worst = f64::INFINITY;
    for (i, conc) in CONNECTIONS.iter().enumerate() {
        let (kh, py) = (&figures[2 * i], &figures[2 * i + 1]);
        let ratio = kh.ops_per_sec / py.ops_per_sec;
        report.row("approve, wrk, kh-review", *conc, kh, None);
        let what = "approve, wrk, the Python seed-design peer";
        report.row(
            what,
            *conc,
            py,
            Some(("kh-review throughput ÷ the peer's", ratio)),
        );
        for (k, (name, _)) in sides.iter().enumerate() {
            // The warm-up round's CPU is left out, as its figures are.
            let all = cpus[2 * i + k].lock().unwrap().clone();
            let measured = &all[all.len() - super::drive::round_count()..];
            let cpu = Cpu::median(measured);
            report.note(format!(
                "CPU per approval, {name}, {conc} connections: {}",
                cpu.line()
            ));
        }
        report.goal(
            &format!("kh-review approvals per second ÷ the peer's, {conc} connections"),
            format!(
                "{ratio:.2}x ({:.0}/s against {:.0}/s)",
                kh.ops_per_sec, py.ops_per_sec
            ),
            "≥ 1.5x",
            ratio >= 1.5,
        );
        worst = worst.min(ratio);
    }
    Ok(worst)
}
