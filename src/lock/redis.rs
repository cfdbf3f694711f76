//! Redis lock provider: `SET NX PX` with an owner token, Lua compare-and-delete release,
//! Lua all-or-nothing compare-and-pexpire renewal, and a fencing token from the same script.
//!
//! Fencing tokens are `max(last + 1, redis TIME in µs)`: strictly increasing per key, and
//! still larger than every earlier token after Redis restarts or is flushed (the time floor
//! survives where the counter does not). So fence keys may expire, and they do: no counter
//! piles up forever. This relies on the Redis host's clock not stepping back by more than a
//! lock's lifetime.
//!
//! Every call is bounded by `op_timeout`; a slow Redis is a down Redis to the caller.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use deadpool::managed::{self, Metrics, Object, QueueMode, RecycleResult};
use deadpool_redis::Config as PoolConfig;
use redis::aio::MultiplexedConnection;
use redis::{RedisError, Script};

use secrecy::ExposeSecret;

use super::{
    fence_key, FencingToken, LockError, LockHandle, LockProvider, OwnerToken, RedisSettings, Ttl,
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

/// How long a fence counter outlives its last acquisition. The time floor keeps tokens
/// increasing after it expires; this only bounds memory.
const FENCE_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// A connection used within this long is handed out again without a health check.
const FRESH: Duration = Duration::from_secs(1);

/// deadpool-redis's connection manager, minus its `PING` round trip on every checkout: a
/// connection used within [`FRESH`] is handed out as it is, an older one is checked first.
/// A connection that fails with a connection error is dropped from the pool (`run`).
pub struct Connections(deadpool_redis::Manager);

impl managed::Manager for Connections {
    type Type = MultiplexedConnection;
    type Error = RedisError;

    async fn create(&self) -> Result<MultiplexedConnection, RedisError> {
        self.0.create().await
    }

    async fn recycle(
        &self,
        conn: &mut MultiplexedConnection,
        metrics: &Metrics,
    ) -> RecycleResult<RedisError> {
        if metrics.last_used() < FRESH {
            return Ok(());
        }
        self.0.recycle(conn, metrics).await
    }
}

pub type Pool = managed::Pool<Connections>;

#[derive(Clone)]
pub struct RedisLockProvider {
    pool: Pool,
    op_timeout: Duration,
    acquire: Script,
    release: Script,
    extend: Script,
}

impl RedisLockProvider {
    /// Creates the pool; does not connect (Redis may be down at start-up).
    pub fn new(url: &str, pool_size: usize, op_timeout: Duration) -> anyhow::Result<Self> {
        let url = PoolConfig::from_url(url)
            .url
            .ok_or_else(|| anyhow::anyhow!("invalid redis configuration: no url"))?;
        let manager = deadpool_redis::Manager::new(url)
            .map_err(|e| anyhow::anyhow!("invalid redis configuration: {e}"))?;
        // No timeouts of the pool's own: `run` bounds the whole call, checkout included,
        // with one timer. Last in, first out: the connection just used goes out again, so
        // at low load one warm connection serves, and the others age into a health check.
        let pool = Pool::builder(Connections(manager))
            .max_size(pool_size)
            .queue_mode(QueueMode::Lifo)
            .build()
            .map_err(|e| anyhow::anyhow!("invalid redis configuration: {e}"))?;
        Ok(Self {
            pool,
            op_timeout,
            acquire: Script::new(ACQUIRE),
            release: Script::new(RELEASE),
            extend: Script::new(EXTEND),
        })
    }

    /// The provider `[redis]` describes.
    pub fn from_settings(settings: &RedisSettings) -> anyhow::Result<Self> {
        Self::new(
            settings.url.expose_secret(),
            settings.pool_size,
            settings.op_timeout,
        )
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Runs one Redis operation under the op timeout. A connection that failed with a
    /// connection error leaves the pool, so the next call does not meet it again.
    async fn run<T, F, Fut>(&self, f: F) -> Result<T, LockError>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
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
                if e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() {
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
                    .arg(FENCE_RETENTION.as_millis() as u64);
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
