//! The pool of Redis connections, for each topology: one server, the master the sentinels
//! name, or a whole cluster.

use std::time::Duration;

use deadpool::managed::{self, Metrics, RecycleError, RecycleResult};
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{
    AsyncConnectionConfig, Client, Cmd, ErrorKind, Pipeline, RedisConnectionInfo, RedisError,
    RedisFuture, ServerErrorKind, TlsMode, Value,
};
use secrecy::ExposeSecret;

use crate::lock::{RedisMode, RedisSettings};

/// A connection used within this long is handed out again without a health check.
const FRESH: Duration = Duration::from_secs(1);

/// One pooled connection: to one server (standalone, or the master the sentinels name), or
/// to a whole cluster (which routes each command by its key's slot and follows MOVED/ASK).
#[derive(Clone)]
pub enum Conn {
    Node(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Node(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Node(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Node(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// Where new connections come from. Following a failover is the client's work: the
/// sentinel client asks the sentinels for the current master (and checks its role) on every
/// new connection; the cluster client refreshes its slot map on MOVED and on errors.
enum Source {
    Standalone(Client),
    Sentinel(tokio::sync::Mutex<SentinelClient>),
    Cluster(ClusterClient),
}

/// The pool's connection manager. A connection used within [`FRESH`] is handed out as it
/// is; an older one is checked with `PING` first. A connection that fails with a
/// connection error, or finds itself on a read-only replica after a failover, is dropped
/// from the pool (`run`), so the next one is made against the current master.
pub struct Connections {
    source: Source,
    config: AsyncConnectionConfig,
}

impl Connections {
    pub(super) fn from_settings(settings: &RedisSettings) -> Result<Self, RedisError> {
        let timeout = settings.op_timeout;
        let source = match settings.mode {
            RedisMode::Standalone => {
                Source::Standalone(Client::open(settings.url.expose_secret())?)
            }
            RedisMode::Sentinel => {
                let sentinels: Vec<&str> = settings
                    .sentinels
                    .iter()
                    .map(|u| u.expose_secret())
                    .collect();
                let mut info = RedisConnectionInfo::default();
                if let Some(password) = &settings.password {
                    info = info.set_password(password.expose_secret());
                }
                let mut node =
                    SentinelNodeConnectionInfo::default().set_redis_connection_info(info);
                if settings.tls {
                    node = node.set_tls_mode(TlsMode::Secure);
                }
                Source::Sentinel(tokio::sync::Mutex::new(SentinelClient::build(
                    sentinels,
                    settings.master_name.clone(),
                    Some(node),
                    SentinelServerType::Master,
                )?))
            }
            RedisMode::Cluster => {
                let nodes: Vec<&str> = settings.nodes.iter().map(|u| u.expose_secret()).collect();
                Source::Cluster(
                    ClusterClientBuilder::new(nodes)
                        .connection_timeout(timeout)
                        .response_timeout(timeout)
                        .build()?,
                )
            }
        };
        Ok(Self {
            source,
            // Both set: since redis 1.0 a connection's replies time out after 500 ms unless told
            // otherwise; ours is the configured timeout, as for the cluster client.
            config: AsyncConnectionConfig::new()
                .set_connection_timeout(Some(timeout))
                .set_response_timeout(Some(timeout)),
        })
    }
}

impl managed::Manager for Connections {
    type Type = Conn;
    type Error = RedisError;

    async fn create(&self) -> Result<Conn, RedisError> {
        Ok(match &self.source {
            Source::Standalone(client) => Conn::Node(
                client
                    .get_multiplexed_async_connection_with_config(&self.config)
                    .await?,
            ),
            Source::Sentinel(client) => Conn::Node(
                client
                    .lock()
                    .await
                    .get_async_connection_with_config(&self.config)
                    .await?,
            ),
            Source::Cluster(client) => Conn::Cluster(client.get_async_connection().await?),
        })
    }

    async fn recycle(&self, conn: &mut Conn, metrics: &Metrics) -> RecycleResult<RedisError> {
        if metrics.last_used() < FRESH {
            return Ok(());
        }
        redis::cmd("PING")
            .query_async::<String>(conn)
            .await
            .map(|_| ())
            .map_err(RecycleError::Backend)
    }
}

pub type Pool = managed::Pool<Connections>;

/// Whether a connection that returned `e` should leave the pool. A cluster connection
/// reconnects to a failed node by itself, so it stays.
pub(super) fn broken(conn: &Conn, e: &RedisError) -> bool {
    matches!(conn, Conn::Node(_))
        && (e.is_io_error()
            || e.is_connection_dropped()
            || e.is_unrecoverable_error()
            || e.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly))
}
