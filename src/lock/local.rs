//! The per-key gate of one instance, used while the outer lock is unavailable (Redis down
//! or skipped by its breaker): at most `per_key` transitions of one key go on to wait on
//! its row lock at a time here; more are refused at once, as a held lock is. Without it,
//! every duplicate of a request would take a pooled connection and wait `lock_timeout` on
//! the same `SELECT ... FOR UPDATE`, and one client could starve the pool.
//!
//! It guards nothing: correctness rests on the row lock (this gate is per instance, and
//! other instances have their own). It must never wait, and holds no entry for a key
//! nobody is passing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub struct LocalGate {
    per_key: usize,
    passing: Mutex<HashMap<String, usize>>,
}

/// A place at the local gate, given back when dropped.
pub struct LocalPass {
    gate: Arc<LocalGate>,
    key: String,
}

impl LocalGate {
    /// A gate that lets `per_key` (at least one) through per key at a time.
    pub fn new(per_key: usize) -> Arc<Self> {
        Arc::new(Self {
            per_key: per_key.max(1),
            passing: Mutex::new(HashMap::new()),
        })
    }

    /// A place for `key`, or None when `per_key` requests already hold one.
    pub fn try_enter(self: &Arc<Self>, key: &str) -> Option<LocalPass> {
        let mut passing = self.passing.lock().expect("local gate poisoned");
        let n = passing.entry(key.to_string()).or_insert(0);
        if *n >= self.per_key {
            return None;
        }
        *n += 1;
        Some(LocalPass {
            gate: self.clone(),
            key: key.to_string(),
        })
    }

    /// Keys somebody is passing now.
    pub fn keys(&self) -> usize {
        self.passing.lock().expect("local gate poisoned").len()
    }
}

impl Drop for LocalPass {
    fn drop(&mut self) {
        let mut passing = self.gate.passing.lock().expect("local gate poisoned");
        if let Some(n) = passing.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                passing.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lets_per_key_through_and_forgets_idle_keys() {
        let gate = LocalGate::new(2);
        let a1 = gate.try_enter("a").expect("first");
        let a2 = gate.try_enter("a").expect("second");
        assert!(gate.try_enter("a").is_none(), "a third of the same key");
        let b = gate.try_enter("b").expect("another key is not held back");
        drop(a1);
        let a3 = gate.try_enter("a").expect("a place was given back");
        drop((a2, a3, b));
        assert_eq!(gate.keys(), 0, "no entry is left for an idle key");
    }
}
