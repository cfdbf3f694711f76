//! Layered configuration: `config/default.toml`, then the file named by `APP_CONFIG_FILE`
//! (if set), then `APP__SECTION__KEY` environment variables.
//!
//! Everything is validated once at start-up; a problem names the offending key. Secrets are
//! `SecretString` and must never be printed.

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::lock::{LockSettings, RedisMode, RedisSettings};
use crate::outbox::{replay::ReplaySettings, AmqpSettings, EventSettings, OutboxSettings};
use crate::shutdown::ShutdownSettings;
use crate::store::mongo::MongoSettings;
use crate::store::{AuditSettings, DatabaseSettings};
use crate::telemetry::{LogSettings, TelemetrySettings};
use crate::usecases::{IdempotencySettings, ReviewSettings};
use crate::web::{AuthSettings, ServerSettings};

/// Every setting; each layer owns its section's type; durations from `_ms`/`_secs` keys.
#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    /// `production` unless set: outside `development` the development JWT secret and short
    /// secrets are refused, and test hooks need `development` or `test`.
    #[serde(default)]
    pub environment: Environment,
    pub server: ServerSettings,
    pub database: DatabaseSettings,
    pub redis: RedisSettings,
    pub lock: LockSettings,
    pub mongo: MongoSettings,
    pub amqp: AmqpSettings,
    pub auth: AuthSettings,
    pub outbox: OutboxSettings,
    pub idempotency: IdempotencySettings,
    /// `[review]`: the default policy and the overdue sweeper; every key has a default.
    #[serde(default)]
    pub review: ReviewSettings,
    /// `[replay]`: the queues replays may target, their pace and leases; every key has a default.
    #[serde(default)]
    pub replay: ReplaySettings,
    pub log: LogSettings,
    /// `[events]`: the CloudEvents source, where the schemas are served; all defaulted.
    #[serde(default)]
    pub events: EventSettings,
    /// `[audit]`: the audit chain's key (see `config_audit.rs` for its checks).
    #[serde(default)]
    pub audit: AuditSettings,
    /// `[telemetry]`: trace export (off unless `otlp_endpoint` is set); all defaulted.
    #[serde(default)]
    pub telemetry: TelemetrySettings,
    /// `[shutdown]`: what a signal does (the drain, the grace); every key has a default.
    #[serde(default)]
    pub shutdown: ShutdownSettings,
}

/// One problem found in the configuration, naming its key.
#[derive(Debug, thiserror::Error)]
#[error("{key}: {problem}")]
pub struct ConfigProblem {
    pub key: &'static str,
    pub problem: String,
}

impl ConfigProblem {
    fn new(key: &'static str, problem: &str) -> Self {
        let problem = problem.to_string();
        Self { key, problem }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("could not load configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("invalid configuration:\n{}", .0.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<ConfigProblem>),
}

/// The public secret of `config/default.toml`: only ever accepted in `development`.
pub const DEV_SECRET: &str = "development-only-secret-change-me";
/// The shortest JWT secret accepted outside `development` (HS256 wants 256 bits).
pub(crate) const MIN_SECRET_BYTES: usize = 32;
/// Where the service runs (`environment`). Only `development` and `test` relax anything;
/// any other name (`production`, the default, or `staging`, ...) gets production's checks.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum Environment {
    /// A developer's machine: the public development secret, test hooks, `kh-review token`.
    Development,
    /// Test runs: test hooks.
    Test,
    /// Production, or another deployment by its name.
    Deployed(String),
}

impl Environment {
    pub fn as_str(&self) -> &str {
        match self {
            Environment::Development => "development",
            Environment::Test => "test",
            Environment::Deployed(name) => name,
        }
    }

    pub fn is_development(&self) -> bool {
        *self == Environment::Development
    }

    /// A deployment (`production`, the default, or any other name): issuer and audience are
    /// required there.
    pub fn is_deployed(&self) -> bool {
        matches!(self, Environment::Deployed(_))
    }

    /// Whether test hooks may be turned on here.
    pub fn allows_test_hooks(&self) -> bool {
        matches!(self, Environment::Development | Environment::Test)
    }
}

impl Default for Environment {
    fn default() -> Self {
        Environment::Deployed("production".to_string())
    }
}

impl From<String> for Environment {
    fn from(name: String) -> Self {
        match name.as_str() {
            "development" => Environment::Development,
            "test" => Environment::Test,
            _ => Environment::Deployed(name),
        }
    }
}

impl From<&str> for Environment {
    fn from(name: &str) -> Self {
        Environment::from(name.to_string())
    }
}

impl PartialEq<&str> for Environment {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Settings {
    /// Loads the layers from `config_dir` (the folder holding `default.toml`) and validates.
    pub fn load_from(config_dir: &std::path::Path) -> Result<Self, ConfigError> {
        Self::load_with(config_dir, &[])
    }

    /// [`Settings::load_from`] with `overrides` (`("section.key", value)`) on top of every
    /// layer, before validation: how tests say `environment = development`.
    pub fn load_with(
        config_dir: &std::path::Path,
        overrides: &[(&str, &str)],
    ) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder()
            .add_source(config::File::from(config_dir.join("default.toml")).required(true));
        if let Ok(extra) = std::env::var("APP_CONFIG_FILE") {
            builder = builder.add_source(config::File::with_name(&extra).required(true));
        }
        builder = builder.add_source(
            config::Environment::with_prefix("APP")
                .prefix_separator("__")
                .separator("__")
                .try_parsing(true)
                // Lists in one variable, comma-separated:
                // APP__REDIS__NODES=redis://a:6379,redis://b:6379
                .list_separator(",")
                .with_list_parse_key("redis.nodes")
                .with_list_parse_key("redis.sentinels")
                .with_list_parse_key("amqp.urls")
                .with_list_parse_key("amqp.required_queues")
                .with_list_parse_key("replay.allowed_target_queues")
                .with_list_parse_key("auth.algorithms"),
        );
        for (key, value) in overrides {
            builder = builder.set_override(*key, *value)?;
        }
        let settings: Settings = builder.build()?.try_deserialize()?;
        settings.validate()?;
        Ok(settings)
    }

    /// Loads from `./config`, or from `APP_CONFIG_DIR` when set.
    pub fn load() -> Result<Self, ConfigError> {
        let dir = std::env::var("APP_CONFIG_DIR").unwrap_or_else(|_| "config".to_string());
        Self::load_from(std::path::Path::new(&dir))
    }

    /// Checks every setting; the error lists each problem, naming its key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        let mut bad =
            |key: &'static str, problem: &str| problems.push(ConfigProblem::new(key, problem));
        self.check_urls(&mut bad);
        self.check_lock(&mut bad);
        self.check_rest(&mut bad);
        self.check_auth(&mut bad);
        self.events.check(&mut bad);
        self.shutdown.check(&mut bad);
        self.check_audit(&mut bad);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }

    fn check_urls(&self, bad: &mut impl FnMut(&'static str, &str)) {
        const REDIS: &[&str] = &["redis", "rediss"];
        let mut urls: Vec<(&'static str, &SecretString, &[&str])> = vec![
            (
                "database.url",
                &self.database.url,
                &["postgres", "postgresql"],
            ),
            ("mongo.url", &self.mongo.url, &["mongodb", "mongodb+srv"]),
        ];
        urls.extend(
            self.amqp
                .urls
                .iter()
                .map(|u| ("amqp.urls", u, &["amqp", "amqps"][..])),
        );
        if self.amqp.urls.is_empty() {
            bad("amqp.urls", "must name at least one broker");
        }
        let redis = &self.redis;
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

    fn check_lock(&self, bad: &mut impl FnMut(&'static str, &str)) {
        let lock = &self.lock;
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
        if self.redis.op_timeout.is_zero() {
            bad("redis.op_timeout_ms", "must be greater than zero");
        }
        if self.redis.op_timeout * 3 >= lock.ttl.as_duration() {
            let problem = "must be well below lock.ttl_ms / 3 (the renewal interval)";
            bad("redis.op_timeout_ms", problem);
        }
        if lock.degraded_per_key == 0 {
            bad("lock.degraded_per_key", "must be at least 1");
        }
        if self.redis.pool_size == 0 {
            bad("redis.pool_size", "must be greater than zero");
        }
    }

    fn check_rest(&self, bad: &mut impl FnMut(&'static str, &str)) {
        if self.database.max_connections == 0 {
            bad("database.max_connections", "must be greater than zero");
        }
        if self.lock.breaker_failure_threshold == 0 {
            bad("lock.breaker_failure_threshold", "must be at least 1");
        }
        if self.outbox.batch_size <= 0 {
            bad("outbox.batch_size", "must be greater than zero");
        }
        if self.outbox.inline_lease.is_zero() {
            bad("outbox.inline_lease_ms", "must be greater than zero");
        }
        if self.outbox.mark_window * 10 > self.outbox.inline_lease {
            bad(
                "outbox.mark_window_ms",
                "must be at most a tenth of outbox.inline_lease_ms (a row waiting for its mark must stay claimed)",
            );
        }
        if self.outbox.purge_batch <= 0 {
            bad("outbox.purge_batch", "must be greater than zero");
        }
        if self.outbox.purge_interval.is_zero() {
            bad("outbox.purge_interval_ms", "must be greater than zero");
        }
        if self.outbox.max_attempts < 1 {
            bad("outbox.max_attempts", "must be at least 1");
        }
        for (key, problem) in self.replay.problems() {
            bad(key, problem);
        }
        if let Err(e) = self.mongo.acknowledgment() {
            bad("mongo.write_concern", e);
        }
        if let Err(e) = self.mongo.read_preference() {
            bad("mongo.read_preference", e);
        }
        if self.mongo.timeout.is_zero() {
            bad("mongo.timeout_ms", "must be greater than zero");
        }
        if self.amqp.max_message_bytes == 0 {
            bad("amqp.max_message_bytes", "must be greater than zero");
        }
        if self.mongo.breaker_failure_threshold == 0 {
            bad("mongo.breaker_failure_threshold", "must be at least 1");
        }
        if let Some(problem) = self.amqp.required_queues_problem() {
            bad("amqp.required_queues", &problem);
        }
        if self.amqp.exchange.trim().is_empty() {
            bad("amqp.exchange", "must not be empty");
        }
        if self.server.workers_setting == Some(0) {
            bad(
                "server.workers",
                "must be at least 1 (or unset: half the CPU cores)",
            );
        }
        self.server.check(bad);
        if self.idempotency.ttl.is_zero() {
            bad("idempotency.ttl_secs", "must be greater than zero");
        }
        if self.idempotency.in_flight_timeout <= self.lock.max_hold {
            let problem = "must be greater than lock.max_hold_ms";
            bad("idempotency.in_flight_timeout_ms", problem);
        }
        if !matches!(self.log.format.as_str(), "pretty" | "json") {
            bad("log.format", "must be \"pretty\" or \"json\"");
        }
        self.telemetry.check(bad);
    }

    /// Whether test-only request headers are honoured: `server.test_hooks` on, in
    /// `development` or `test` (start-up refuses the setting anywhere else).
    pub fn test_hooks(&self) -> bool {
        self.server.test_hooks && self.environment.allows_test_hooks()
    }
}

#[path = "config_auth.rs"]
mod auth_checks;

#[path = "config_audit.rs"]
mod audit_checks;

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
