//! The lock's Lua scripts, and how they run: by hash, or by source on a node that does not
//! know them yet.

use redis::{Cmd, ErrorKind, FromRedisValue, RedisResult, Script, ServerErrorKind};

use super::connections::Conn;

pub(super) const ACQUIRE: &str = r#"
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

pub(super) const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"#;

pub(super) const EXTEND: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"#;

/// A Lua script, run by its SHA1 (`EVALSHA`), and by its source (`EVAL`) on a node that does
/// not know it yet (restarted, or a replica just promoted). Never `SCRIPT LOAD`: a cluster
/// client sends that to every node, so it fails while any node is down, even one that holds
/// no slot any more.
pub(super) struct Lua {
    code: &'static str,
    hash: String,
}

impl Lua {
    pub(super) fn new(code: &'static str) -> Self {
        Self {
            code,
            hash: Script::new(code).get_hash().to_string(),
        }
    }

    /// Runs the script; `fill` adds the key count, the keys and the arguments.
    pub(super) async fn eval<T: FromRedisValue>(
        &self,
        conn: &mut Conn,
        fill: impl Fn(&mut Cmd),
    ) -> RedisResult<T> {
        let mut by_hash = redis::cmd("EVALSHA");
        by_hash.arg(&self.hash);
        fill(&mut by_hash);
        match by_hash.query_async(conn).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                let mut by_source = redis::cmd("EVAL");
                by_source.arg(self.code);
                fill(&mut by_source);
                by_source.query_async(conn).await
            }
            reply => reply,
        }
    }
}
