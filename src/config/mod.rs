//! Layered configuration: `config/default.toml`, then the file named by `APP_CONFIG_FILE`
//! (if set), then `APP__SECTION__KEY` environment variables. Each layer owns the type of
//! its own section; `settings` assembles them, loads and validates (`Settings`);
//! `environment` is where the service runs; the checks that need more than one section's
//! type are in `checks` (URLs, `[lock]`, the rest), `auth` and `audit`.
//!
//! Everything is validated once at start-up; a problem names the offending key. Secrets are
//! `SecretString` and must never be printed.

mod audit;
mod auth;
mod checks;
mod environment;
mod settings;

pub use environment::Environment;
pub(crate) use settings::MIN_SECRET_BYTES;
pub use settings::{ConfigError, ConfigProblem, Settings, DEV_SECRET};

#[cfg(test)]
mod tests;
