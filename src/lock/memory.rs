//! In-memory lock provider for unit tests and single-process use. Same contract as the
//! Redis provider; never a stand-in for it in a multi-instance deployment.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{
    Attempt, FencingToken, LockError, LockHandle, LockProvider, OwnerToken, Ownership, Ttl,
};

#[derive(Default)]
pub struct MemoryLockProvider {
    inner: Mutex<State>,
}

#[derive(Default)]
struct State {
    held: HashMap<String, (OwnerToken, Instant)>,
    /// One counter for every key, so tokens of different keys compare like the Redis
    /// provider's clock-floored ones do.
    fence: i64,
}

impl State {
    fn live(&mut self, key: &str, now: Instant) -> Option<&(OwnerToken, Instant)> {
        if matches!(self.held.get(key), Some((_, exp)) if *exp <= now) {
            self.held.remove(key);
        }
        self.held.get(key)
    }
}

impl MemoryLockProvider {
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl LockProvider for MemoryLockProvider {
    async fn acquire(&self, key: &str, ttl: Ttl) -> Result<Attempt, LockError> {
        let now = Instant::now();
        let mut st = self.inner.lock().expect("lock state poisoned");
        if let Some((_, exp)) = st.live(key, now) {
            let holder_ttl = exp.saturating_duration_since(now);
            return Ok(Attempt::Busy {
                holder_ttl: Some(holder_ttl.max(Duration::from_millis(1))),
            });
        }
        let token = OwnerToken::generate();
        let expires_at = now + ttl.as_duration();
        st.held.insert(key.to_string(), (token.clone(), expires_at));
        st.fence += 1;
        Ok(Attempt::Held(LockHandle {
            ownership: Ownership {
                key: key.to_string(),
                token,
            },
            expires_at,
            fencing_token: FencingToken::new(st.fence),
        }))
    }

    async fn release(&self, owner: &Ownership) -> Result<bool, LockError> {
        let now = Instant::now();
        let mut st = self.inner.lock().expect("lock state poisoned");
        match st.live(&owner.key, now) {
            Some((tok, _)) if *tok == owner.token => {
                st.held.remove(&owner.key);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn extend(&self, owner: &Ownership, ttl: Ttl) -> Result<bool, LockError> {
        let now = Instant::now();
        let mut st = self.inner.lock().expect("lock state poisoned");
        match st.live(&owner.key, now) {
            Some((tok, _)) if *tok == owner.token => {}
            _ => return Ok(false),
        }
        if let Some(entry) = st.held.get_mut(&owner.key) {
            entry.1 = now + ttl.as_duration();
        }
        Ok(true)
    }

    async fn locked(&self, key: &str) -> Result<bool, LockError> {
        let now = Instant::now();
        let mut st = self.inner.lock().expect("lock state poisoned");
        Ok(st.live(key, now).is_some())
    }

    async fn ping(&self) -> Result<(), LockError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::contract;

    #[tokio::test]
    async fn memory_provider_passes_the_contract() {
        contract::run_all(&MemoryLockProvider::new(), "mem-test:").await;
    }
}
