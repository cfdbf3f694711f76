//! The broker's nodes as a connection sees them: on every (re)connect each node is tried
//! once, each within its own short connect timeout, all within the caller's budget, and the
//! first node tried rotates. A silent node (one that accepts TCP and never answers, or drops
//! packets) costs at most its share of the budget, so the next one is always dialled, and a
//! connection lost with its node starts the next round at the node after it: the service
//! does not keep knocking at the node that just died while the others work.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::anyhow;
use secrecy::SecretString;
use tokio::time::Instant;

pub struct Nodes {
    urls: Vec<SecretString>,
    connect_timeout: Duration,
    /// The node the next round starts at: the one after the last that was connected to.
    next: AtomicUsize,
}

/// A connection made, and which node (1-based, as configured) made it.
pub struct Connected<T> {
    pub value: T,
    pub node: usize,
}

impl Nodes {
    pub fn new(urls: Vec<SecretString>, connect_timeout: Duration) -> Self {
        Self {
            urls,
            connect_timeout,
            next: AtomicUsize::new(0),
        }
    }

    /// The order one round tries the nodes in (indexes into the configured list).
    fn order(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.urls.len().max(1);
        let start = self.next.load(Ordering::Relaxed) % n;
        (0..self.urls.len()).map(move |k| (start + k) % n)
    }

    /// How long one node may take: its connect timeout, or less, so that the nodes still to
    /// be tried each get an equal share of what is left of `budget`.
    fn share(&self, left: Duration, nodes_left: usize) -> Duration {
        self.connect_timeout.min(left / nodes_left.max(1) as u32)
    }

    /// Connects with `connect` to the first node that answers, trying each once within
    /// `budget` in all. On success the next round will start at the node after this one.
    pub async fn connect_any<T, F, Fut>(
        &self,
        budget: Duration,
        connect: F,
    ) -> anyhow::Result<Connected<T>>
    where
        F: Fn(SecretString) -> Fut,
        Fut: Future<Output = anyhow::Result<T>>,
    {
        let end = Instant::now() + budget;
        let order: Vec<usize> = self.order().collect();
        let mut failures = Vec::new();
        for (k, &i) in order.iter().enumerate() {
            let share = self.share(
                end.saturating_duration_since(Instant::now()),
                order.len() - k,
            );
            let failure = match tokio::time::timeout(share, connect(self.urls[i].clone())).await {
                Ok(Ok(value)) => {
                    self.next.store(i + 1, Ordering::Relaxed);
                    if k > 0 {
                        tracing::info!(node = i + 1, "rabbitmq: connected to another node");
                    }
                    return Ok(Connected { value, node: i + 1 });
                }
                Ok(Err(e)) => format!("node {}: {e:#}", i + 1),
                Err(_) => format!("node {}: did not answer within {share:?}", i + 1),
            };
            if k + 1 < order.len() {
                tracing::warn!(node = i + 1, error = %failure, "rabbitmq node unreachable: trying the next");
            }
            failures.push(failure);
        }
        // Start the next round elsewhere too: the first node of this one answered nothing.
        if let Some(&first) = order.first() {
            self.next.store(first + 1, Ordering::Relaxed);
        }
        Err(anyhow!(
            "no rabbitmq node answered ({})",
            failures.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;
    use std::sync::Mutex;

    fn nodes(n: usize, connect_timeout: Duration) -> Nodes {
        let urls = (1..=n)
            .map(|i| SecretString::from(format!("node{i}")))
            .collect();
        Nodes::new(urls, connect_timeout)
    }

    /// A connect that never answers on the nodes named in `silent`, fails at once on those in
    /// `refused`, and records every node it was asked for.
    async fn dial(
        url: SecretString,
        silent: &[&str],
        refused: &[&str],
        tried: &Mutex<Vec<String>>,
    ) -> anyhow::Result<String> {
        let name = url.expose_secret().to_string();
        tried.lock().unwrap().push(name.clone());
        if silent.contains(&name.as_str()) {
            std::future::pending::<()>().await;
        }
        if refused.contains(&name.as_str()) {
            return Err(anyhow!("refused"));
        }
        Ok(name)
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_first_node_leaves_time_for_the_others() {
        let ring = nodes(3, Duration::from_secs(5));
        let tried = Mutex::new(Vec::new());
        let started = Instant::now();
        let got = ring
            .connect_any(Duration::from_secs(3), |u| {
                dial(u, &["node1"], &["node2"], &tried)
            })
            .await
            .unwrap();
        assert_eq!((got.value.as_str(), got.node), ("node3", 3));
        assert_eq!(*tried.lock().unwrap(), ["node1", "node2", "node3"]);
        // node 1 had a third of the budget, not its (longer) connect timeout
        assert_eq!(started.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn the_next_round_starts_after_the_node_last_used() {
        let ring = nodes(3, Duration::from_millis(500));
        let tried = Mutex::new(Vec::new());
        let budget = Duration::from_secs(3);
        let first = ring
            .connect_any(budget, |u| dial(u, &[], &[], &tried))
            .await
            .unwrap();
        assert_eq!(first.node, 1);
        // node 2 died meanwhile: the round after node 1 tries node 2, then node 3
        let second = ring
            .connect_any(budget, |u| dial(u, &["node2"], &[], &tried))
            .await
            .unwrap();
        assert_eq!(second.node, 3);
        let third = ring
            .connect_any(budget, |u| dial(u, &[], &[], &tried))
            .await
            .unwrap();
        assert_eq!(third.node, 1, "after node 3 comes node 1 again");
        assert_eq!(*tried.lock().unwrap(), ["node1", "node2", "node3", "node1"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_round_where_none_answers_names_each_and_moves_on() {
        let ring = nodes(2, Duration::from_millis(400));
        let tried = Mutex::new(Vec::new());
        let err = ring
            .connect_any(Duration::from_secs(2), |u| {
                dial(u, &["node1"], &["node2"], &tried)
            })
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("node 1: did not answer within 400ms"), "{err}");
        assert!(err.contains("node 2: refused"), "{err}");
        let next = ring
            .connect_any(Duration::from_secs(2), |u| dial(u, &[], &[], &tried))
            .await
            .unwrap();
        assert_eq!(next.node, 2, "the silent node 1 is not tried first again");
    }
}
