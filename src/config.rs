//! Layered configuration: `config/default.toml`, then the file named by `APP_CONFIG_FILE`
//! (if set), then `APP__SECTION__KEY` environment variables.
//!
//! Everything is validated once at start-up; a problem names the offending key. Secrets are
//! `SecretString` and must never be printed.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::lock::Ttl;

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

#[derive(Debug, Clone, Deserialize)]
pub struct ServerSettings {
    pub host: String,
    pub port: u16,
    pub json_limit_bytes: usize,
    pub shutdown_grace_ms: u64,
    /// Honour test-only request headers (pausing a transition before COMMIT). Never in production.
    pub test_hooks: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DatabaseSettings {
    pub url: SecretString,
    pub max_connections: u32,
    pub acquire_timeout_ms: u64,
    pub lock_timeout_ms: u64,
    pub statement_timeout_ms: u64,
    pub migrate_on_start: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RedisSettings {
    pub url: SecretString,
    pub key_prefix: String,
    pub pool_size: usize,
    pub op_timeout_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LockSettings {
    pub ttl_ms: u64,
    /// How often the watchdog renews a held lock; defaults to ttl / 3.
    #[serde(default)]
    pub renew_interval_ms: Option<u64>,
    pub max_hold_ms: u64,
    pub retry_after_secs: u64,
    pub breaker_failure_threshold: u32,
    pub breaker_open_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MongoSettings {
    pub url: SecretString,
    pub database: String,
    pub collection: String,
    pub timeout_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AmqpSettings {
    pub url: SecretString,
    pub exchange: String,
    pub bind_queue: String,
    pub timeout_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AuthSettings {
    pub jwt_secret: SecretString,
}

#[derive(Debug, Clone, Deserialize)]
pub struct OutboxSettings {
    pub poll_interval_ms: u64,
    pub batch_size: i64,
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    /// Run the background dispatcher in this process.
    pub run_dispatcher: bool,
    /// Delivered outbox rows are deleted after this many hours.
    pub retention_hours: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IdempotencySettings {
    /// How long a stored response is replayed for the same key.
    pub ttl_secs: u64,
    /// How long a request may hold its key before a retry may take it over (a request that
    /// never finished, e.g. its instance died). Must exceed lock.max_hold_ms.
    pub in_flight_timeout_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LogSettings {
    pub format: String,
    pub level: String,
}

/// One problem found in the configuration, naming its key.
#[derive(Debug, thiserror::Error)]
#[error("{key}: {problem}")]
pub struct ConfigProblem {
    pub key: &'static str,
    pub problem: String,
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
                    .try_parsing(true),
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

    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        let mut bad =
            |key: &'static str, problem: String| problems.push(ConfigProblem { key, problem });
        let url_check = |url: &SecretString, schemes: &[&str]| -> Option<String> {
            let s = url.expose_secret();
            match s.split_once("://") {
                Some((scheme, rest)) if schemes.contains(&scheme) && !rest.is_empty() => None,
                _ => Some(format!(
                    "must be a URL starting with {}://",
                    schemes.join("|")
                )),
            }
        };
        if let Some(p) = url_check(&self.database.url, &["postgres", "postgresql"]) {
            bad("database.url", p);
        }
        if let Some(p) = url_check(&self.redis.url, &["redis", "rediss"]) {
            bad("redis.url", p);
        }
        if let Some(p) = url_check(&self.mongo.url, &["mongodb", "mongodb+srv"]) {
            bad("mongo.url", p);
        }
        if let Some(p) = url_check(&self.amqp.url, &["amqp", "amqps"]) {
            bad("amqp.url", p);
        }
        if self.lock.ttl_ms == 0 {
            bad(
                "lock.ttl_ms",
                "must be greater than zero: no permanent locks".into(),
            );
        }
        if let Some(every) = self.lock.renew_interval_ms {
            if every == 0 || every >= self.lock.ttl_ms {
                bad(
                    "lock.renew_interval_ms",
                    "must be greater than zero and below lock.ttl_ms".into(),
                );
            }
        }
        if self.lock.max_hold_ms < self.lock.ttl_ms {
            bad("lock.max_hold_ms", "must be at least lock.ttl_ms".into());
        }
        if self.redis.op_timeout_ms == 0 {
            bad("redis.op_timeout_ms", "must be greater than zero".into());
        }
        if self.redis.op_timeout_ms * 3 >= self.lock.ttl_ms {
            bad(
                "redis.op_timeout_ms",
                "must be well below lock.ttl_ms / 3 (the renewal interval)".into(),
            );
        }
        if self.redis.pool_size == 0 {
            bad("redis.pool_size", "must be greater than zero".into());
        }
        if self.database.max_connections == 0 {
            bad(
                "database.max_connections",
                "must be greater than zero".into(),
            );
        }
        if self.lock.breaker_failure_threshold == 0 {
            bad(
                "lock.breaker_failure_threshold",
                "must be at least 1".into(),
            );
        }
        if self.outbox.batch_size <= 0 {
            bad("outbox.batch_size", "must be greater than zero".into());
        }
        if self.amqp.exchange.trim().is_empty() {
            bad("amqp.exchange", "must not be empty".into());
        }
        if self.server.test_hooks && self.environment == "production" {
            bad("server.test_hooks", "must be off in production".into());
        }
        if self.idempotency.ttl_secs == 0 {
            bad("idempotency.ttl_secs", "must be greater than zero".into());
        }
        if self.idempotency.in_flight_timeout_ms <= self.lock.max_hold_ms {
            bad(
                "idempotency.in_flight_timeout_ms",
                "must be greater than lock.max_hold_ms".into(),
            );
        }
        if !matches!(self.log.format.as_str(), "pretty" | "json") {
            bad("log.format", "must be \"pretty\" or \"json\"".into());
        }
        let secret = self.auth.jwt_secret.expose_secret();
        if secret.len() < 16 {
            bad("auth.jwt_secret", "must be at least 16 bytes".into());
        }
        if self.environment != "development" && secret == DEV_SECRET {
            bad(
                "auth.jwt_secret",
                "the development secret may not be used outside development; set APP__AUTH__JWT_SECRET".into(),
            );
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }

    /// The watchdog's renewal interval: `lock.renew_interval_ms`, or ttl / 3.
    pub fn renew_every(&self) -> Duration {
        Duration::from_millis(
            self.lock
                .renew_interval_ms
                .unwrap_or(self.lock.ttl_ms / 3)
                .max(1),
        )
    }

    pub fn lock_ttl(&self) -> Ttl {
        Ttl::new(Duration::from_millis(self.lock.ttl_ms)).expect("validated: ttl > 0")
    }
}

#[cfg(test)]
mod tests {
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
        s.lock.ttl_ms = 0;
        assert_eq!(
            problems(&s),
            ["database.url", "lock.ttl_ms", "redis.op_timeout_ms"],
            "bad URL, zero TTL, and the Redis timeout no longer below ttl/3"
        );
        let mut s = defaults();
        s.lock.renew_interval_ms = Some(s.lock.ttl_ms);
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
    }

    #[test]
    fn the_error_lists_every_problem_without_secrets() {
        let mut s = defaults();
        s.environment = "staging".into();
        s.amqp.url = SecretString::from("http://user:hunter2@host");
        let text = s.validate().unwrap_err().to_string();
        assert!(
            text.contains("amqp.url") && text.contains("auth.jwt_secret"),
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
        s.lock.ttl_ms = 900;
        s.lock.renew_interval_ms = None;
        assert_eq!(s.renew_every(), Duration::from_millis(300));
    }
}
