//! `Settings`: every layer's section, assembled, loaded from the layers and validated; the
//! problems a validation finds, each naming its key.

use serde::Deserialize;

use super::audit::check_audit;
use super::auth::check_auth;
use super::checks::{check_lock, check_rest, check_urls};
use super::environment::Environment;
use crate::lock::{LockSettings, RedisSettings};
use crate::outbox::webhooks::WebhookSettings;
use crate::outbox::{replay::ReplaySettings, AmqpSettings, EventSettings, OutboxSettings};
use crate::shutdown::ShutdownSettings;
use crate::store::mongo::MongoSettings;
use crate::store::{AuditSettings, DatabaseSettings};
use crate::telemetry::{LogSettings, TelemetrySettings};
use crate::usecases::{EditSettings, IdempotencySettings, ReviewSettings};
use crate::web::{AuthSettings, HttpSettings, ServerSettings};

/// Every setting; each layer owns its section's type; durations from `_ms`/`_secs` keys.
#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    /// `production` unless set: outside `development` the development JWT secret and short
    /// secrets are refused, and test hooks need `development` or `test`.
    #[serde(default)]
    pub environment: Environment,
    pub server: ServerSettings,
    /// `[http]`: conditional requests (`require_if_match`); defaulted.
    #[serde(default)]
    pub http: HttpSettings,
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
    /// `[edit]`: edit leases (`lease_ttl_secs`); defaulted.
    #[serde(default)]
    pub edit: EditSettings,
    /// `[replay]`: the queues replays may target, their pace and leases; every key has a default.
    #[serde(default)]
    pub replay: ReplaySettings,
    pub log: LogSettings,
    /// `[events]`: the CloudEvents source, where the schemas are served; all defaulted.
    #[serde(default)]
    pub events: EventSettings,
    /// `[audit]`: the audit chain's key (see `config/audit.rs` for its checks).
    #[serde(default)]
    pub audit: AuditSettings,
    /// `[telemetry]`: trace export (off unless `otlp_endpoint` is set); all defaulted.
    #[serde(default)]
    pub telemetry: TelemetrySettings,
    /// `[webhooks]`: deliveries' timeout, retries, concurrency, allowed private ranges;
    /// every key has a default.
    #[serde(default)]
    pub webhooks: WebhookSettings,
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
                .with_list_parse_key("auth.algorithms")
                .with_list_parse_key("webhooks.allowed_ranges")
                .with_list_parse_key("webhooks.retry_schedule_secs"),
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
        check_urls(self, &mut bad);
        check_lock(self, &mut bad);
        check_rest(self, &mut bad);
        check_auth(self, &mut bad);
        self.events.check(&mut bad);
        self.shutdown.check(&mut bad);
        self.webhooks.check(&mut bad);
        check_audit(self, &mut bad);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }

    /// Whether test-only request headers are honoured: `server.test_hooks` on, in
    /// `development` or `test` (start-up refuses the setting anywhere else).
    pub fn test_hooks(&self) -> bool {
        self.server.test_hooks && self.environment.allows_test_hooks()
    }
}
