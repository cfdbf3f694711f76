//! Logging set-up: `tracing` with pretty or JSON output. `RUST_LOG` overrides the level.

use serde::Deserialize;
use tracing_subscriber::{fmt, EnvFilter};

/// `[log]` in `config/default.toml`.
#[derive(Debug, Clone, Deserialize)]
pub struct LogSettings {
    /// "pretty" or "json"
    pub format: String,
    pub level: String,
}

/// Installs the global subscriber once; later calls are no-ops (tests build many apps).
pub fn init(settings: &LogSettings) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&settings.level));
    // Colours only for a person at a terminal, never into a log file or collector.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let _ = if settings.format == "json" {
        builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init()
    } else {
        builder.try_init()
    };
}
