//! The `kh-review` binary: parses the command line and calls into the library.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kh_review::config::Settings;
use kh_review::shutdown::Deadline;
use kh_review::startup::{Application, CoreBuilder};
use kh_review::store::mongo::CheckpointStore;
use kh_review::store::PgStore;
use kh_review::telemetry;
use kh_review::usecases::{AuditService, CheckpointUse};
use kh_review::web::auth::{sign, Role};

#[derive(Parser)]
#[command(
    name = "kh-review",
    version,
    about = "Document-review workflow service"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API (and run the outbox dispatcher unless outbox.run_dispatcher=false).
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Run only the outbox dispatcher, without HTTP.
    Dispatch,
    /// Load and validate the configuration, print problems, and exit.
    CheckConfig,
    /// Exit 0 when the local server's /readyz answers 200 (for container health checks).
    Probe {
        /// Default: the server's own port (`server.port`, from the same settings it reads).
        #[arg(long)]
        port: Option<u16>,
    },
    /// Print the AsyncAPI document `/asyncapi.json` serves with this configuration (what
    /// docs/asyncapi.json holds for the default one).
    Asyncapi,
    /// The audit chain: `audit verify [--document ID]` recomputes it and exits 1 at the
    /// first row that does not match.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Print a signed JWT for local use (development environment only).
    Token {
        /// The user id (`sub`).
        sub: String,
        /// Roles: author, reviewer, admin (comma-separated), or `none` (a member of spaces
        /// only).
        #[arg(long, default_value = "author")]
        roles: String,
        #[arg(long, default_value_t = 3600)]
        ttl_secs: u64,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Recompute the chains (every one, or one document's); print what was checked and
    /// the first broken row; exit 1 when one is broken.
    Verify {
        #[arg(long)]
        document: Option<uuid::Uuid>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings = match Settings::load() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let traces = telemetry::install(&settings.log, &settings.telemetry);
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(settings).await,
        Command::Migrate => migrate(&settings).await,
        Command::Dispatch => dispatch(settings).await,
        Command::CheckConfig => {
            println!(
                "configuration is valid (environment: {})",
                settings.environment
            );
            Ok(())
        }
        Command::Token {
            sub,
            roles,
            ttl_secs,
        } => token(&settings, &sub, &roles, ttl_secs),
        Command::Probe { port } => probe(port.unwrap_or(settings.server.port)),
        Command::Asyncapi => asyncapi(&settings),
        Command::Audit {
            command: AuditCommand::Verify { document },
        } => audit_verify(&settings, document).await,
    };
    // After the server drained: the spans of its last requests are sent before exit.
    traces.shutdown().await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "exiting on error");
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("install SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

async fn serve(settings: Settings) -> anyhow::Result<()> {
    let host = settings.server.host.clone();
    let app = Application::build(settings).await?;
    tracing::info!(%host, port = app.port(), "kh-review listening");
    app.run_until(shutdown_signal()).await
}

async fn migrate(settings: &Settings) -> anyhow::Result<()> {
    PgStore::from_settings(&settings.database)?
        .with_audit(&settings.audit)
        .migrate()
        .await?;
    println!("migrations applied");
    Ok(())
}

/// `audit verify`: the chains recomputed on the configured database, with the service's key,
/// and checked against the latest checkpoint. Exits 1 when a chain is broken, and when the
/// check could not look for rewound or deleted chains (no silent pass).
async fn audit_verify(settings: &Settings, document: Option<uuid::Uuid>) -> anyhow::Result<()> {
    let store = PgStore::from_settings(&settings.database)?
        .with_audit(&settings.audit)
        .background();
    let checkpoints = CheckpointStore::from_settings(&settings.mongo, &settings.audit).await?;
    let started = std::time::Instant::now();
    let report = AuditService::new(store.clone(), checkpoints)
        .verify(document, Default::default())
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    store.close().await;
    let took = started.elapsed().as_secs_f64();
    println!("checked {} rows in {took:.1} s", report.verified.checked);
    match &report.checkpoint {
        CheckpointUse::Checked {
            sequence,
            taken_at,
            chains,
        } => println!("against checkpoint {sequence} of {taken_at} ({chains} chains)"),
        other => println!("NOT CHECKED: {}", other.unchecked().unwrap_or_default()),
    }
    let Some(b) = report.verified.broken_at else {
        if !matches!(report.checkpoint, CheckpointUse::Checked { .. }) {
            anyhow::bail!("the chains hold against their heads, but not every check could run");
        }
        println!("every chain holds");
        return Ok(());
    };
    let or_none = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
    println!(
        "broken: {} at {} row {} document {} space {} position {}",
        b.found.as_str(),
        b.table,
        or_none(b.id),
        or_none(b.document_id.map(|d| d.to_string())),
        or_none(b.space),
        or_none(b.position.map(|p| p.to_string())),
    );
    anyhow::bail!("the audit chain is broken")
}

async fn dispatch(settings: Settings) -> anyhow::Result<()> {
    let core = CoreBuilder::new(&settings).build().await?;
    core.spawn_dispatcher();
    shutdown_signal().await;
    core.close(Deadline::after(settings.shutdown.grace)).await;
    Ok(())
}

fn token(settings: &Settings, sub: &str, roles: &str, ttl_secs: u64) -> anyhow::Result<()> {
    anyhow::ensure!(
        settings.environment.is_development(),
        "tokens are only minted here in the development environment"
    );
    // `none`: a token with no roles of its own, for a member of spaces only.
    let roles: Vec<Role> = roles
        .split(',')
        .filter(|r| !r.trim().is_empty() && r.trim() != "none")
        .map(|r| serde_json::from_value(serde_json::Value::String(r.trim().to_string())))
        .collect::<Result<_, _>>()
        .map_err(|_| anyhow::anyhow!("roles must be among author, reviewer, admin, or none"))?;
    println!("{}", sign(&settings.auth.jwt_secret, sub, &roles, ttl_secs));
    Ok(())
}

fn asyncapi(settings: &Settings) -> anyhow::Result<()> {
    let doc = kh_review::outbox::asyncapi::document(&settings.amqp.exchange, &settings.events);
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

fn probe(port: u16) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    let timeout = std::time::Duration::from_secs(2);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = std::net::TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.write_all(b"GET /readyz HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    anyhow::ensure!(
        head.ends_with(b" 200"),
        "readyz answered {}",
        String::from_utf8_lossy(&head)
    );
    Ok(())
}
