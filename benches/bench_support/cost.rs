//! What an approval costs its hosts: CPU time of the service process, of PostgreSQL, of
//! FerretDB, of RabbitMQ and of Redis (from `/proc`), and commits in the service's database
//! (`pg_stat_database.xact_commit`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sqlx::PgPool;

use super::kind::sized;

/// Cumulative counters at one moment.
#[derive(Debug, Clone)]
pub struct CostSample {
    /// CPU seconds of the service process.
    pub service_cpu: f64,
    /// Ticks of the PostgreSQL backends serving the service's database, by pid.
    pg_db: PostgresTicks,
    /// CPU seconds of every PostgreSQL process (all databases, background workers), those
    /// that have exited included.
    pub pg_all_cpu: f64,
    /// CPU seconds of every redis-server process.
    pub redis_cpu: f64,
    /// CPU seconds of the FerretDB process the service's MongoDB URL reaches.
    pub ferretdb_cpu: f64,
    /// CPU seconds of the RabbitMQ node (an Erlang VM, `beam.smp`) the service's AMQP URL
    /// reaches.
    pub rabbitmq_cpu: f64,
    /// CPU seconds of this process (the benchmark: the HTTP client while it drives).
    pub client_cpu: f64,
    pub commits: i64,
}

/// Per approval, between two samples.
#[derive(Debug, Clone, Copy, Default)]
pub struct CostPer {
    pub service_cpu_ms: f64,
    pub pg_db_cpu_ms: f64,
    pub pg_all_cpu_ms: f64,
    pub redis_cpu_ms: f64,
    pub ferretdb_cpu_ms: f64,
    pub rabbitmq_cpu_ms: f64,
    /// CPU of the benchmark process driving the approvals over HTTP.
    pub client_cpu_ms: f64,
    pub commits: f64,
    /// CPU of the benchmark process per approval of the floor: the same store calls made
    /// by the same client crates, with no service in between.
    pub floor_cpu_ms: f64,
    /// The same for the floor of the new statements.
    pub new_floor_cpu_ms: f64,
}

fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// utime + stime of a process, in clock ticks (0 when it is gone).
fn cpu_ticks(pid: &str) -> u64 {
    stat_ticks(pid).0
}

/// (utime + stime, cutime + cstime) of a process in clock ticks, (0, 0) when it is gone.
/// The second is the CPU of its children that have exited and been waited for: a server's
/// workers that came and went between two samples (PostgreSQL's backends, when a client
/// closes its connection) are there, in their parent's figure.
fn stat_ticks(pid: &str) -> (u64, u64) {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return (0, 0);
    };
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return (0, 0);
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    (field(11) + field(12), field(13) + field(14))
}

/// CPU seconds (user + system) of a process so far: a pid, or "self".
pub fn cpu_seconds(pid: &str) -> f64 {
    cpu_ticks(pid) as f64 / ticks_per_second()
}

/// The port a URL names (`host:port` after the scheme and credentials), if any.
fn port_of(url: &str) -> Option<u16> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?']).next()?;
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    host.split(',').next()?.rsplit_once(':')?.1.parse().ok()
}

/// Ticks of every process whose command is `comm` and whose `/proc/<pid>/<file>`
/// (`cmdline` or `environ`) holds `needle` (`""` holds in every one).
fn ticks_of(comm: &str, file: &str, needle: &str) -> u64 {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .map(|p| p.file_name().to_string_lossy().to_string())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| {
            let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let holds = || {
                let text = std::fs::read(format!("/proc/{pid}/{file}")).unwrap_or_default();
                String::from_utf8_lossy(&text).contains(needle)
            };
            name.trim() == comm && (needle.is_empty() || holds())
        })
        .map(|pid| cpu_ticks(&pid))
        .sum()
}

/// The stores the service reaches, to tell their processes from the topologies' (other
/// RabbitMQ nodes and FerretDB instances may run on the same machine).
#[derive(Debug, Clone, Copy)]
pub struct Stores {
    pub amqp_port: u16,
    pub mongo_port: u16,
}

impl Stores {
    pub fn of(amqp_url: &str, mongo_url: &str) -> Self {
        Self {
            amqp_port: port_of(amqp_url).unwrap_or(5672),
            mongo_port: port_of(mongo_url).unwrap_or(27017),
        }
    }
}

/// Ticks of PostgreSQL's processes at one moment.
#[derive(Debug, Clone, Default)]
struct PostgresTicks {
    /// Each backend of the named database, by pid.
    of_db: HashMap<String, u64>,
    /// Every postgres process's own ticks and those of its exited children: a backend that
    /// exits moves its ticks to the postmaster's children's figure, so this never goes back.
    all: u64,
}

impl PostgresTicks {
    /// Ticks the backends of the database spent since `before`: the growth of each backend
    /// seen both times, and the whole of each one that started since. A backend that
    /// exited in between is left out (its last ticks are lost; the figure is never less
    /// than zero, as a difference of totals would be).
    fn of_db_since(&self, before: &Self) -> u64 {
        self.of_db
            .iter()
            .map(|(pid, t)| t.saturating_sub(before.of_db.get(pid).copied().unwrap_or(0)))
            .sum()
    }
}

fn postgres_ticks(db: &str) -> PostgresTicks {
    let mut ticks = PostgresTicks::default();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return ticks;
    };
    let needle = format!(" {db} ");
    for p in procs.flatten() {
        let pid = p.file_name().to_string_lossy().to_string();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if comm.trim() != "postgres" && !cmdline.starts_with("postgres") {
            continue;
        }
        let (own, children) = stat_ticks(&pid);
        ticks.all += own + children;
        if !db.is_empty() && cmdline.contains(&needle) {
            ticks.of_db.insert(pid, own);
        }
    }
    ticks
}

async fn commits(admin: &PgPool, db: &str) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT xact_commit FROM pg_stat_database WHERE datname = $1")
            .bind(db)
            .fetch_one(admin)
            .await?,
    )
}

impl CostPer {
    /// The CPU of every process an approval runs in but the client: the service,
    /// PostgreSQL (all of it: FerretDB's SQL included), FerretDB, RabbitMQ and Redis.
    pub fn total_cpu_ms(&self) -> f64 {
        self.service_cpu_ms
            + self.pg_all_cpu_ms
            + self.ferretdb_cpu_ms
            + self.rabbitmq_cpu_ms
            + self.redis_cpu_ms
    }
}

impl CostSample {
    /// Samples once the database's commit counter has settled. An idle backend publishes
    /// its counts up to 10 s late (PostgreSQL's idle statistics interval), so the counter
    /// must stand still for longer than that. `admin` must be connected to another
    /// database, so that reading does not count.
    pub async fn settled(
        admin: &PgPool,
        db: &str,
        service_pid: u32,
        stores: Stores,
    ) -> anyhow::Result<Self> {
        // The smoke run takes what the counter says a second after it last moved.
        let still_for = Duration::from_secs(sized(11, 1));
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut last = commits(admin, db).await?;
        let mut since = Instant::now();
        while since.elapsed() < still_for {
            anyhow::ensure!(
                Instant::now() < deadline,
                "the commit counter of {db} never settled"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = commits(admin, db).await?;
            if now != last {
                (last, since) = (now, Instant::now());
            }
        }
        let hz = ticks_per_second();
        let StoresCpu {
            postgres,
            ferretdb,
            rabbitmq,
            redis,
        } = StoresCpu::now(stores);
        Ok(Self {
            service_cpu: cpu_ticks(&service_pid.to_string()) as f64 / hz,
            pg_db: postgres_ticks(db),
            pg_all_cpu: postgres,
            redis_cpu: redis,
            ferretdb_cpu: ferretdb,
            rabbitmq_cpu: rabbitmq,
            client_cpu: cpu_seconds("self"),
            commits: last,
        })
    }

    pub fn per(&self, before: &CostSample, n: usize) -> CostPer {
        let n = n as f64;
        CostPer {
            service_cpu_ms: (self.service_cpu - before.service_cpu) * 1000.0 / n,
            pg_db_cpu_ms: self.pg_db.of_db_since(&before.pg_db) as f64 / ticks_per_second()
                * 1000.0
                / n,
            pg_all_cpu_ms: (self.pg_all_cpu - before.pg_all_cpu) * 1000.0 / n,
            redis_cpu_ms: (self.redis_cpu - before.redis_cpu) * 1000.0 / n,
            ferretdb_cpu_ms: (self.ferretdb_cpu - before.ferretdb_cpu) * 1000.0 / n,
            rabbitmq_cpu_ms: (self.rabbitmq_cpu - before.rabbitmq_cpu) * 1000.0 / n,
            client_cpu_ms: (self.client_cpu - before.client_cpu) * 1000.0 / n,
            commits: (self.commits - before.commits) as f64 / n,
            floor_cpu_ms: f64::NAN,
            new_floor_cpu_ms: f64::NAN,
        }
    }
}

/// CPU seconds of the stores' processes at one moment: all of PostgreSQL, FerretDB,
/// RabbitMQ and Redis (as [`CostSample`] reads them, with no settling).
#[derive(Debug, Clone, Copy, Default)]
pub struct StoresCpu {
    pub postgres: f64,
    pub ferretdb: f64,
    pub rabbitmq: f64,
    pub redis: f64,
}

impl StoresCpu {
    pub fn now(stores: Stores) -> Self {
        let hz = ticks_per_second();
        Self {
            postgres: postgres_ticks("").all as f64 / hz,
            ferretdb: ticks_of("ferretdb", "cmdline", &format!(":{}", stores.mongo_port)) as f64
                / hz,
            rabbitmq: ticks_of(
                "beam.smp",
                "environ",
                &format!("RABBITMQ_NODE_PORT={}", stores.amqp_port),
            ) as f64
                / hz,
            redis: ticks_of("redis-server", "cmdline", "") as f64 / hz,
        }
    }
}

/// CPU seconds of a process and of every process below it (a server's workers).
pub fn tree_cpu_seconds(root: u32) -> f64 {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    // (pid, parent) of every process, then the ones whose chain of parents reaches `root`.
    let parents: Vec<(u32, u32)> = procs
        .flatten()
        .filter_map(|p| p.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (_, rest) = stat.rsplit_once(')')?;
            Some((pid, rest.split_whitespace().nth(1)?.parse().ok()?))
        })
        .collect();
    let parent_of = |pid: u32| parents.iter().find(|(p, _)| *p == pid).map(|(_, pp)| *pp);
    let below = |mut pid: u32| loop {
        if pid == root {
            return true;
        }
        match parent_of(pid) {
            Some(pp) if pp > 1 => pid = pp,
            _ => return false,
        }
    };
    let ticks: u64 = parents
        .iter()
        .filter(|(pid, _)| below(*pid))
        .map(|(pid, _)| cpu_ticks(&pid.to_string()))
        .sum();
    ticks as f64 / ticks_per_second()
}
