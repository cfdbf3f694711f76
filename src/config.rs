//! Layered configuration: `config/default.toml`, then the file named by `APP_CONFIG_FILE`
//! (if set), then `APP__SECTION__KEY` environment variables.
//!
//! Everything is validated once at start-up; a problem names the offending key. Secrets are
//! `SecretString` and must never be printed.

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::http::{AuthSettings, ServerSettings};
use crate::lock::{LockSettings, RedisMode, RedisSettings};
use crate::outbox::{AmqpSettings, OutboxSettings};
use crate::review::IdempotencySettings;
use crate::store::mongo::MongoSettings;
use crate::store::DatabaseSettings;
use crate::telemetry::LogSettings;

/// Every setting of the service. Each layer owns the type of its own section; durations
/// are `Duration`s, read from the `_ms` / `_secs` keys.
#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    pub environment: String,
    pub server: ServerSettings,
    pub database: DatabaseSettings,
    pub redis: RedisSettings,
    pub lock: LockSettings,
    pub mongo: MongoSettings,
    pub amqp: AmqpSettings,
    pub auth: AuthSettings,
    pub outbox: OutboxSettings,
    pub idempotency: IdempotencySettings,
    pub log: LogSettings,
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
        Self {
            key,
            problem: problem.to_string(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("could not load configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("invalid configuration:\n{}", .0.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<ConfigProblem>),
}

const DEV_SECRET: &str = "development-only-secret-change-me";

impl Settings {
    /// Loads the layers from `config_dir` (the folder holding `default.toml`) and validates.
    pub fn load_from(config_dir: &std::path::Path) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder()
            .add_source(config::File::from(config_dir.join("default.toml")).required(true));
        if let Ok(extra) = std::env::var("APP_CONFIG_FILE") {
            builder = builder.add_source(config::File::with_name(&extra).required(true));
        }
        let settings: Settings = builder
            .add_source(
                config::Environment::with_prefix("APP")
                    .prefix_separator("__")
                    .separator("__")
                    .try_parsing(true)
                    // Lists in one variable, comma-separated:
                    // APP__REDIS__NODES=redis://a:6379,redis://b:6379
                    .list_separator(",")
                    .with_list_parse_key("redis.nodes")
                    .with_list_parse_key("redis.sentinels")
                    .with_list_parse_key("amqp.urls"),
            )
            .build()?
            .try_deserialize()?;
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
        if lock.ttl.as_millis() == 0 {
            bad(
                "lock.ttl_ms",
                "must be greater than zero: no permanent locks",
            );
        }
        if lock
            .renew_interval
            .is_some_and(|every| every.is_zero() || every >= lock.ttl)
        {
            let problem = "must be greater than zero and below lock.ttl_ms";
            bad("lock.renew_interval_ms", problem);
        }
        if lock.max_hold < lock.ttl {
            bad("lock.max_hold_ms", "must be at least lock.ttl_ms");
        }
        if self.redis.op_timeout.is_zero() {
            bad("redis.op_timeout_ms", "must be greater than zero");
        }
        if self.redis.op_timeout * 3 >= lock.ttl {
            let problem = "must be well below lock.ttl_ms / 3 (the renewal interval)";
            bad("redis.op_timeout_ms", problem);
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
        if let Err(e) = self.mongo.acknowledgment() {
            bad("mongo.write_concern", e);
        }
        if let Err(e) = self.mongo.read_preference() {
            bad("mongo.read_preference", e);
        }
        if self.mongo.timeout.is_zero() {
            bad("mongo.timeout_ms", "must be greater than zero");
        }
        if self.mongo.breaker_failure_threshold == 0 {
            bad("mongo.breaker_failure_threshold", "must be at least 1");
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
        if self.server.test_hooks && self.environment == "production" {
            bad("server.test_hooks", "must be off in production");
        }
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
        let secret = self.auth.jwt_secret.expose_secret();
        if secret.len() < 16 {
            bad("auth.jwt_secret", "must be at least 16 bytes");
        }
        if self.environment != "development" && secret == DEV_SECRET {
            let problem = "the development secret may not be used outside development; \
                           set APP__AUTH__JWT_SECRET";
            bad("auth.jwt_secret", problem);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn defaults() -> Settings {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
        let mut builder = config::Config::builder()
            .add_source(config::File::from(dir.join("default.toml")).required(true));
        builder = builder.set_override("environment", "development").unwrap();
        builder.build().unwrap().try_deserialize().unwrap()
    }

    fn problems(s: &Settings) -> Vec<&'static str> {
        match s.validate() {
            Ok(()) => vec![],
            Err(ConfigError::Invalid(ps)) => ps.into_iter().map(|p| p.key).collect(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn the_defaults_are_valid() {
        assert!(problems(&defaults()).is_empty());
    }

    #[test]
    fn each_problem_names_its_key() {
        let mut s = defaults();
        s.database.url = SecretString::from("mysql://x");
        s.lock.ttl = Duration::ZERO;
        assert_eq!(
            problems(&s),
            ["database.url", "lock.ttl_ms", "redis.op_timeout_ms"],
            "bad URL, zero TTL, and the Redis timeout no longer below ttl/3"
        );
        let mut s = defaults();
        s.lock.renew_interval = Some(s.lock.ttl);
        assert_eq!(problems(&s), ["lock.renew_interval_ms"]);
        let mut s = defaults();
        s.environment = "production".into();
        assert_eq!(
            problems(&s),
            ["auth.jwt_secret"],
            "the development secret outside development"
        );
        s.auth.jwt_secret = SecretString::from("a-real-production-secret-value");
        s.server.test_hooks = true;
        assert_eq!(problems(&s), ["server.test_hooks"]);
        let mut s = defaults();
        s.server.workers_setting = Some(0);
        assert_eq!(problems(&s), ["server.workers"]);
    }

    #[test]
    fn topology_settings_are_checked_for_each_mode() {
        let mut s = defaults();
        s.redis.mode = RedisMode::Cluster;
        assert_eq!(problems(&s), ["redis.nodes"], "cluster mode without nodes");
        s.redis.nodes = vec![SecretString::from("http://10.0.0.1:6379")];
        assert_eq!(problems(&s), ["redis.nodes"], "not a redis URL");
        s.redis.nodes = vec![SecretString::from("rediss://:pw@10.0.0.1:6379")];
        assert!(problems(&s).is_empty());
        s.redis.mode = RedisMode::Sentinel;
        assert_eq!(problems(&s), ["redis.sentinels", "redis.master_name"]);
        s.redis.sentinels = vec![SecretString::from("redis://10.0.0.1:26379")];
        s.redis.master_name = "kh-master".into();
        assert!(problems(&s).is_empty());
        s.redis.key_prefix = "kh:{x}:".into();
        assert_eq!(
            problems(&s),
            ["redis.key_prefix"],
            "braces break the hash tag"
        );
        let mut s = defaults();
        s.amqp.urls.clear();
        assert_eq!(problems(&s), ["amqp.urls"]);
        s.mongo.write_concern = "0".into();
        s.mongo.read_preference = "secondaryish".into();
        assert_eq!(
            problems(&s),
            ["amqp.urls", "mongo.write_concern", "mongo.read_preference"]
        );
        s.mongo.write_concern = "2".into();
        s.mongo.read_preference = "secondaryPreferred".into();
        assert_eq!(problems(&s), ["amqp.urls"]);
        let unknown = RedisMode::try_from("replicated".to_string()).unwrap_err();
        assert!(unknown.starts_with("redis.mode: "), "{unknown}");
        let unknown = crate::outbox::QueueType::try_from("lazy".to_string()).unwrap_err();
        assert!(unknown.starts_with("amqp.bind_queue_type: "), "{unknown}");
    }

    #[test]
    fn http_workers_default_to_half_the_cores_and_follow_the_setting() {
        let mut s = defaults();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(s.server.workers(), (cores / 2).max(1));
        s.server.workers_setting = Some(3);
        assert_eq!(s.server.workers(), 3);
    }

    #[test]
    fn the_error_lists_every_problem_without_secrets() {
        let mut s = defaults();
        s.environment = "staging".into();
        s.amqp.urls = vec![SecretString::from("http://user:hunter2@host")];
        let text = s.validate().unwrap_err().to_string();
        assert!(
            text.contains("amqp.urls") && text.contains("auth.jwt_secret"),
            "{text}"
        );
        assert!(
            !text.contains("hunter2"),
            "no secret in the message: {text}"
        );
    }

    #[test]
    fn renewal_defaults_to_a_third_of_the_ttl() {
        let mut s = defaults();
        s.lock.ttl = Duration::from_millis(900);
        s.lock.renew_interval = None;
        assert_eq!(s.lock.renew_every(), Duration::from_millis(300));
    }
}
