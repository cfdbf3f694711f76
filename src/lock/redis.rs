//! Redis lock provider: `SET NX PX` with an owner token, Lua compare-and-delete release,
//! Lua all-or-nothing compare-and-pexpire renewal, and a fencing token from the same script.
//!
//! Fencing tokens are `max(last + 1, redis TIME in µs)`: strictly increasing per key, and
//! still larger than every earlier token after Redis restarts, is flushed or fails over (the
//! time floor survives where the counter does not). So fence counters expire once no lease
//! they issued can be alive (`LockSettings::fence_retention`, minutes). This relies on the
//! Redis hosts' clocks agreeing and not stepping back (`docs/decisions.md`).
//!
//! Works against one server, the master of a Sentinel set-up, or a Redis Cluster; every
//! script touches the keys of one hash slot only (`LockKeys`).
//!
//! Every call is bounded by `op_timeout`; a slow Redis is a down Redis to the caller.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use deadpool::managed::{self, Metrics, Object, QueueMode, RecycleError, RecycleResult};
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{
    AsyncConnectionConfig, Client, Cmd, ErrorKind, Pipeline, RedisConnectionInfo, RedisError,
    RedisFuture, Script, TlsMode, Value,
};
use secrecy::ExposeSecret;

use super::{
    fence_key, FencingToken, LockError, LockHandle, LockProvider, OwnerToken, RedisMode,
    RedisSettings, Ttl,
};

const ACQUIRE: &str = r#"
local ok = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
if not ok then
  return {0, redis.call('PTTL', KEYS[1])}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local f = now
if f <= last then f = last + 1 end
redis.call('SET', KEYS[2], string.format('%.0f', f), 'PX', ARGV[3])
return {1, f}
"#;

const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"#;

const EXTEND: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"#;

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
    fn from_settings(settings: &RedisSettings) -> Result<Self, RedisError> {
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
                let node = SentinelNodeConnectionInfo {
                    tls_mode: settings.tls.then_some(TlsMode::Secure),
                    redis_connection_info: Some(RedisConnectionInfo {
                        password: settings
                            .password
                            .as_ref()
                            .map(|p| p.expose_secret().to_string()),
                        ..Default::default()
                    }),
                };
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
            config: AsyncConnectionConfig::new().set_connection_timeout(timeout),
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
fn broken(conn: &Conn, e: &RedisError) -> bool {
    matches!(conn, Conn::Node(_))
        && (e.is_io_error()
            || e.is_connection_dropped()
            || e.is_unrecoverable_error()
            || e.kind() == ErrorKind::ReadOnly)
}

#[derive(Clone)]
pub struct RedisLockProvider {
    pool: Pool,
    op_timeout: Duration,
    fence_retention: Duration,
    acquire: Script,
    release: Script,
    extend: Script,
}

impl RedisLockProvider {
    /// One standalone server at `url` (tests and benchmarks), with fence counters kept a
    /// minute. Does not connect.
    pub fn new(url: &str, pool_size: usize, op_timeout: Duration) -> anyhow::Result<Self> {
        let settings = RedisSettings {
            mode: RedisMode::Standalone,
            url: url.to_string().into(),
            nodes: Vec::new(),
            sentinels: Vec::new(),
            master_name: String::new(),
            password: None,
            tls: false,
            key_prefix: String::new(),
            pool_size,
            op_timeout,
        };
        Self::from_settings(&settings, Duration::from_secs(60))
    }

    /// The provider `[redis]` describes, keeping fence counters `fence_retention` after
    /// their last acquisition. Creates the pool; does not connect (Redis may be down at
    /// start-up).
    pub fn from_settings(
        settings: &RedisSettings,
        fence_retention: Duration,
    ) -> anyhow::Result<Self> {
        let manager = Connections::from_settings(settings)
            .map_err(|e| anyhow::anyhow!("invalid redis configuration: {e}"))?;
        // No timeouts of the pool's own: `run` bounds the whole call, checkout included,
        // with one timer. Last in, first out: the connection just used goes out again, so
        // at low load one warm connection serves, and the others age into a health check.
        let pool = Pool::builder(manager)
            .max_size(settings.pool_size)
            .queue_mode(QueueMode::Lifo)
            .build()
            .map_err(|e| anyhow::anyhow!("invalid redis configuration: {e}"))?;
        Ok(Self {
            pool,
            op_timeout: settings.op_timeout,
            fence_retention,
            acquire: Script::new(ACQUIRE),
            release: Script::new(RELEASE),
            extend: Script::new(EXTEND),
        })
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Runs one Redis operation under the op timeout. A connection that turned out broken
    /// leaves the pool, so the next call does not meet it again.
    async fn run<T, F, Fut>(&self, f: F) -> Result<T, LockError>
    where
        F: FnOnce(Conn) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let work = async {
            let conn = self
                .pool
                .get()
                .await
                .map_err(|e| LockError::Unavailable(format!("redis pool: {e}")))?;
            let result = f((*conn).clone()).await;
            if let Err(e) = &result {
                if broken(&conn, e) {
                    let _ = Object::take(conn);
                }
            }
            result.map_err(|e| LockError::Unavailable(format!("redis: {e}")))
        };
        match tokio::time::timeout(self.op_timeout, work).await {
            Ok(r) => r,
            Err(_) => Err(LockError::Unavailable(format!(
                "redis did not answer within {:?}",
                self.op_timeout
            ))),
        }
    }
}

#[async_trait]
impl LockProvider for RedisLockProvider {
    async fn acquire(&self, key: &str, ttl: Ttl) -> Result<LockHandle, LockError> {
        let token = OwnerToken::generate();
        let started = Instant::now();
        let reply: Result<(i64, i64), LockError> = self
            .run(|mut c| {
                let mut inv = self.acquire.prepare_invoke();
                inv.key(key)
                    .key(fence_key(key))
                    .arg(token.as_str())
                    .arg(ttl.as_millis())
                    .arg(self.fence_retention.as_millis() as u64);
                async move { inv.invoke_async(&mut c).await }
            })
            .await;
        let (ok, value) = match reply {
            Ok(r) => r,
            Err(e) => {
                // The SET may have landed after we stopped waiting: give the key back in the
                // background, by owner token, so it does not block others for a whole TTL.
                let (this, key, token) = (self.clone(), key.to_string(), token.clone());
                tokio::spawn(async move {
                    let ghost = LockHandle {
                        acquired: true,
                        lock_key: key,
                        owner_token: token,
                        expires_at: Instant::now(),
                        fencing_token: None,
                        holder_ttl: None,
                    };
                    let _ = this.release(&ghost).await;
                });
                return Err(e);
            }
        };
        let acquired = ok == 1;
        Ok(LockHandle {
            acquired,
            lock_key: key.to_string(),
            owner_token: token,
            // Counted from before the call: the lock may have started any time after that.
            expires_at: started + ttl.as_duration(),
            fencing_token: acquired.then(|| FencingToken::new(value)),
            holder_ttl: (!acquired && value > 0).then(|| Duration::from_millis(value as u64)),
        })
    }

    async fn release(&self, handle: &LockHandle) -> Result<bool, LockError> {
        let n: i64 = self
            .run(|mut c| {
                let mut inv = self.release.prepare_invoke();
                inv.key(&handle.lock_key).arg(handle.owner_token.as_str());
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        Ok(n == 1)
    }

    async fn extend(&self, handle: &LockHandle, ttl: Ttl) -> Result<bool, LockError> {
        let n: i64 = self
            .run(|mut c| {
                let mut inv = self.extend.prepare_invoke();
                inv.key(&handle.lock_key)
                    .arg(handle.owner_token.as_str())
                    .arg(ttl.as_millis());
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        Ok(n == 1)
    }

    async fn locked(&self, key: &str) -> Result<bool, LockError> {
        let n: i64 = self
            .run(|mut c| async move { redis::cmd("EXISTS").arg(key).query_async(&mut c).await })
            .await?;
        Ok(n == 1)
    }

    /// `PING`, under the op timeout.
    async fn ping(&self) -> Result<(), LockError> {
        self.run(|mut c| async move { redis::cmd("PING").query_async::<String>(&mut c).await })
            .await
            .map(|_| ())
    }
}
