//! What PostgreSQL did per approval, statement by statement, from `pg_stat_statements`
//! (the local server loads it: `scripts/services/postgres.sh`). Calls, plans, buffers and
//! WAL records are counts, the same from run to run where CPU time is not; the times are
//! wall times of backends that share the machine with every other process of the run.

use std::collections::HashMap;

use sqlx::PgPool;

/// The counters of one statement (one database, one query id, top level or nested),
/// summed over the roles that ran it.
#[derive(Debug, Clone, Default, sqlx::FromRow)]
struct Counters {
    db: String,
    queryid: i64,
    toplevel: bool,
    query: String,
    calls: i64,
    plans: i64,
    exec_ms: f64,
    plan_ms: f64,
    buffers: i64,
    wal_records: i64,
}

/// Every statement's counters at one moment, or why they cannot be read.
#[derive(Debug, Clone)]
pub struct StatementStats(Result<HashMap<(String, i64, bool), Counters>, String>);

/// One statement's share of each approval between two readings.
#[derive(Debug, Clone)]
pub struct PerApproval {
    pub db: String,
    pub top_level: bool,
    pub label: String,
    pub calls: f64,
    pub plans: f64,
    pub exec_us: f64,
    pub plan_us: f64,
    pub buffers: f64,
    pub wal_records: f64,
}

impl StatementStats {
    /// The counters of the statements run in the databases `dbs`, each statement's summed
    /// over the roles that ran it (the view keeps a row per role: the service's `BEGIN`
    /// and the benchmark's own are one statement).
    pub async fn read(admin: &PgPool, dbs: &[&str]) -> Self {
        let rows = sqlx::query_as::<_, Counters>(
            "SELECT d.datname::text AS db, s.queryid, s.toplevel, min(s.query) AS query, \
                    sum(s.calls)::int8 AS calls, sum(s.plans)::int8 AS plans, \
                    sum(s.total_exec_time) AS exec_ms, sum(s.total_plan_time) AS plan_ms, \
                    sum(s.shared_blks_hit + s.shared_blks_read)::int8 AS buffers, \
                    sum(s.wal_records)::int8 AS wal_records \
             FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid \
             WHERE d.datname = ANY($1) AND s.queryid IS NOT NULL \
             GROUP BY 1, 2, 3",
        )
        .bind(dbs)
        .fetch_all(admin)
        .await;
        Self(rows.map_err(|e| e.to_string()).map(|rows| {
            rows.into_iter()
                .map(|c| ((c.db.clone(), c.queryid, c.toplevel), c))
                .collect()
        }))
    }

    /// Each statement's growth since `before`, per approval (`n` of them), the most time
    /// first; or why the view could not be read.
    pub fn per(&self, before: &Self, n: usize) -> Result<Vec<PerApproval>, String> {
        let (now, then) = match (&self.0, &before.0) {
            (Ok(now), Ok(then)) => (now, then),
            (Err(e), _) | (_, Err(e)) => return Err(e.clone()),
        };
        let n = n.max(1) as f64;
        let none = Counters::default();
        let mut out: Vec<PerApproval> = now
            .iter()
            .filter_map(|(key, c)| {
                let b = then.get(key).unwrap_or(&none);
                (c.calls > b.calls).then(|| PerApproval {
                    db: c.db.clone(),
                    top_level: c.toplevel,
                    label: label(&c.query),
                    calls: (c.calls - b.calls) as f64 / n,
                    plans: (c.plans - b.plans) as f64 / n,
                    exec_us: (c.exec_ms - b.exec_ms) * 1000.0 / n,
                    plan_us: (c.plan_ms - b.plan_ms) * 1000.0 / n,
                    buffers: (c.buffers - b.buffers) as f64 / n,
                    wal_records: (c.wal_records - b.wal_records) as f64 / n,
                })
            })
            .collect();
        out.sort_by(|a, b| (b.exec_us + b.plan_us).total_cmp(&(a.exec_us + a.plan_us)));
        Ok(out)
    }
}

/// A statement as a table cell: its first comment line when it opens with one (the
/// service's statements say there what they are and where they live), else its text,
/// whitespace collapsed, cut at 90 characters.
fn label(query: &str) -> String {
    let text = match query.trim_start().strip_prefix("--") {
        Some(comment) => comment
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string(),
        None => query.split_whitespace().collect::<Vec<_>>().join(" "),
    };
    text.chars().take(90).collect()
}

/// The report's lines: a header, then the `top` statements by time, then the sums of the
/// top-level statements of each database (nested ones, a trigger's or a function's, are
/// inside their caller's time and counted again on their own line).
pub fn lines(per: &[PerApproval], top: usize) -> Vec<String> {
    let mut out = vec![format!(
        "{:<9} {:>5} {:>6} {:>6} {:>7} {:>7} {:>7} {:>5}  statement",
        "database", "level", "calls", "plans", "exec µs", "plan µs", "buffers", "WAL"
    )];
    for s in per.iter().take(top) {
        out.push(format!(
            "{:<9} {:>5} {:>6.2} {:>6.2} {:>7.1} {:>7.1} {:>7.1} {:>5.1}  {}",
            s.db.chars().take(9).collect::<String>(),
            if s.top_level { "top" } else { "inner" },
            s.calls,
            s.plans,
            s.exec_us,
            s.plan_us,
            s.buffers,
            s.wal_records,
            s.label
        ));
    }
    let mut dbs: Vec<&str> = per.iter().map(|s| s.db.as_str()).collect();
    dbs.sort_unstable();
    dbs.dedup();
    for db in dbs {
        let sum = |field: fn(&PerApproval) -> f64| -> f64 {
            per.iter()
                .filter(|s| s.db == db && s.top_level)
                .map(field)
                .sum()
        };
        out.push(format!(
            "{db}: {:.2} top-level statements per approval, {:.0} µs executing and \
             {:.0} µs planning (wall), {:.1} buffers, {:.1} WAL records",
            sum(|s| s.calls),
            sum(|s| s.exec_us),
            sum(|s| s.plan_us),
            sum(|s| s.buffers),
            sum(|s| s.wal_records)
        ));
    }
    out
}
