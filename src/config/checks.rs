//! The checks of the connection URLs, of `[lock]` and of the other sections that need more
//! than their own type to judge: part of `Settings::validate`, each problem naming its key.

use secrecy::{ExposeSecret, SecretString};

use super::Settings;
use crate::lock::RedisMode;

pub(super) fn check_urls(s: &Settings, bad: &mut impl FnMut(&'static str, &str)) {
    const REDIS: &[&str] = &["redis", "rediss"];
    const PG: &[&str] = &["postgres", "postgresql"];
    let mut urls: Vec<(&'static str, &SecretString, &[&str])> = vec![
        ("database.url", &s.database.url, PG),
        ("mongo.url", &s.mongo.url, &["mongodb", "mongodb+srv"]),
    ];
    urls.extend(
        s.amqp
            .urls
            .iter()
            .map(|u| ("amqp.urls", u, &["amqp", "amqps"][..])),
    );
    if s.amqp.urls.is_empty() {
        bad("amqp.urls", "must name at least one broker");
    }
    let redis = &s.redis;
    match redis.mode {
        RedisMode::Standalone => urls.push(("redis.url", &redis.url, REDIS)),
        RedisMode::Cluster => {
            if redis.nodes.is_empty() {
                bad("redis.nodes", "cluster mode needs at least one node URL");
            }
            urls.extend(redis.nodes.iter().map(|u| ("redis.nodes", u, REDIS)));
        }
        RedisMode::Sentinel => {
            if redis.sentinels.is_empty() {
                bad(
                    "redis.sentinels",
                    "sentinel mode needs at least one sentinel URL",
                );
            }
            if redis.master_name.trim().is_empty() {
                bad(
                    "redis.master_name",
                    "sentinel mode needs the monitored master's name",
                );
            }
            urls.extend(
                redis
                    .sentinels
                    .iter()
                    .map(|u| ("redis.sentinels", u, REDIS)),
            );
        }
    }
    if let Some(owner) = &s.database.migrate_url {
        urls.push(("database.migrate_url", owner, PG));
        if server_and_database(owner) != server_and_database(&s.database.url) {
            let problem =
                "must name the server and database of database.url (only the role differs)";
            bad("database.migrate_url", problem);
        }
    }
    for (key, url, schemes) in urls {
        match url.expose_secret().split_once("://") {
            Some((scheme, rest)) if schemes.contains(&scheme) && !rest.is_empty() => {}
            _ => bad(
                key,
                &format!("must be a URL starting with {}://", schemes.join("|")),
            ),
        }
    }
    if redis.key_prefix.contains(['{', '}']) {
        bad(
            "redis.key_prefix",
            "may not contain { or }: the lock keys carry their own Redis Cluster hash tag",
        );
    }
}

pub(super) fn check_lock(s: &Settings, bad: &mut impl FnMut(&'static str, &str)) {
    let lock = &s.lock;
    if lock
        .renew_interval
        .is_some_and(|every| every.is_zero() || every >= lock.ttl.as_duration())
    {
        let problem = "must be greater than zero and below lock.ttl_ms";
        bad("lock.renew_interval_ms", problem);
    }
    if lock.max_hold < lock.ttl.as_duration() {
        bad("lock.max_hold_ms", "must be at least lock.ttl_ms");
    }
    if s.redis.op_timeout.is_zero() {
        bad("redis.op_timeout_ms", "must be greater than zero");
    }
    if s.redis.op_timeout * 3 >= lock.ttl.as_duration() {
        let problem = "must be well below lock.ttl_ms / 3 (the renewal interval)";
        bad("redis.op_timeout_ms", problem);
    }
    if lock.degraded_per_key == 0 {
        bad("lock.degraded_per_key", "must be at least 1");
    }
    if s.redis.pool_size == 0 {
        bad("redis.pool_size", "must be greater than zero");
    }
}

pub(super) fn check_rest(s: &Settings, bad: &mut impl FnMut(&'static str, &str)) {
    if s.database.max_connections == 0 {
        bad("database.max_connections", "must be greater than zero");
    }
    if s.database.access_connections == 0 {
        bad("database.access_connections", "must be greater than zero");
    }
    if s.edit.lease_ttl.is_zero() {
        bad(
            "edit.lease_ttl_secs",
            "must be at least 1: a lease that never lasts keeps nobody out",
        );
    }
    if s.lock.breaker_failure_threshold == 0 {
        bad("lock.breaker_failure_threshold", "must be at least 1");
    }
    if s.outbox.batch_size <= 0 {
        bad("outbox.batch_size", "must be greater than zero");
    }
    if s.outbox.inline_lease.is_zero() {
        bad("outbox.inline_lease_ms", "must be greater than zero");
    }
    if s.outbox.mark_window * 10 > s.outbox.inline_lease {
        bad(
            "outbox.mark_window_ms",
            "must be at most a tenth of outbox.inline_lease_ms (a row waiting for its mark must stay claimed)",
        );
    }
    if s.outbox.purge_batch <= 0 {
        bad("outbox.purge_batch", "must be greater than zero");
    }
    if s.outbox.purge_interval.is_zero() {
        bad("outbox.purge_interval_ms", "must be greater than zero");
    }
    if s.outbox.max_attempts < 1 {
        bad("outbox.max_attempts", "must be at least 1");
    }
    for (key, problem) in s.replay.problems() {
        bad(key, problem);
    }
    if let Err(e) = s.mongo.acknowledgment() {
        bad("mongo.write_concern", e);
    }
    if let Err(e) = s.mongo.read_preference() {
        bad("mongo.read_preference", e);
    }
    if s.mongo.timeout.is_zero() {
        bad("mongo.timeout_ms", "must be greater than zero");
    }
    if s.amqp.max_message_bytes == 0 {
        bad("amqp.max_message_bytes", "must be greater than zero");
    }
    if s.mongo.breaker_failure_threshold == 0 {
        bad("mongo.breaker_failure_threshold", "must be at least 1");
    }
    if let Some(problem) = s.amqp.required_queues_problem() {
        bad("amqp.required_queues", &problem);
    }
    if s.amqp.exchange.trim().is_empty() {
        bad("amqp.exchange", "must not be empty");
    }
    if s.server.workers_setting == Some(0) {
        bad(
            "server.workers",
            "must be at least 1 (or unset: half the CPU cores)",
        );
    }
    s.server.check(bad);
    if s.idempotency.ttl.is_zero() {
        bad("idempotency.ttl_secs", "must be greater than zero");
    }
    if s.idempotency.in_flight_timeout <= s.lock.max_hold {
        let problem = "must be greater than lock.max_hold_ms";
        bad("idempotency.in_flight_timeout_ms", problem);
    }
    if !matches!(s.log.format.as_str(), "pretty" | "json") {
        bad("log.format", "must be \"pretty\" or \"json\"");
    }
    s.telemetry.check(bad);
}

/// The server and database a PostgreSQL URL names (`host:port/db`, without its user,
/// password and parameters).
fn server_and_database(url: &SecretString) -> &str {
    let url = url.expose_secret();
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, at)| at);
    rest.split('?').next().unwrap_or(rest)
}
