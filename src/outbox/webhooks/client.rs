//! The HTTP client of deliveries, and the SSRF guard that runs when it connects: every
//! name is resolved by [`GuardedResolver`], which refuses the lookup when any address it
//! gives is loopback, private, link-local, CGNAT, unique-local or mapped from one of them
//! (`domain::webhooks::refusal`), unless an allowed range holds it. The check is made at
//! each connection, on the addresses connected to, so a name that resolved to a public
//! address at registration and resolves inside now (DNS rebinding) is refused. A URL whose
//! host is an address is never looked up: `check_url` judges it before each send.
//! No proxy is used (a proxy would connect for us, past the guard) and no redirect is
//! followed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::domain::webhooks::{refusal, AllowedRanges};

/// The resolver that refuses addresses inside the service's network.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    allowed: Arc<AllowedRanges>,
}

/// Why a name was not resolved (shown in the delivery log).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allowed = self.allowed.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if found.is_empty() {
                return Err(Refused(format!("{host} resolves to no address")).into());
            }
            for addr in &found {
                if let Some(why) = refusal(addr.ip(), &allowed) {
                    return Err(Refused(format!(
                        "{host} resolves to {} ({why}): webhooks may not reach inside the \
                         service's network",
                        addr.ip()
                    ))
                    .into());
                }
            }
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

/// The client every delivery is sent with: the guarded resolver, `timeout` per request,
/// no redirects, no proxy.
pub fn delivery_client(timeout: Duration, allowed: &AllowedRanges) -> reqwest::Client {
    let resolver = GuardedResolver {
        allowed: Arc::new(allowed.clone()),
    };
    reqwest::Client::builder()
        .dns_resolver(Arc::new(resolver))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout)
        .pool_idle_timeout(Duration::from_secs(30))
        .user_agent(concat!("kh-review-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("the webhook client builds")
}
