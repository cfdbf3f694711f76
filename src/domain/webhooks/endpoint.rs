//! What a webhook endpoint may be registered with: its URL ([`check_url`]) and the event
//! types it subscribes to ([`check_event_types`]). The URL is checked as written; an IP
//! address in it must pass the SSRF guard's rules (`address.rs`), and the addresses a host
//! name resolves to are checked again at every delivery. Errors are shown to API users as
//! they are.

use url::{Host, Url};

use super::address::{refusal, AllowedRanges};

/// The longest URL an endpoint may have, in bytes.
pub const MAX_URL_LEN: usize = 2048;

/// The most event types an endpoint may subscribe to.
pub const MAX_EVENT_TYPES: usize = 32;

/// `text` as an endpoint's URL, if it may be one: absolute, at most [`MAX_URL_LEN`] bytes,
/// `https` (or `http` too unless `https_only`), with a host that is not `localhost` and, if
/// it is an IP address, one the SSRF guard accepts under `allowed`; no user name, password
/// or fragment.
pub fn check_url(text: &str, https_only: bool, allowed: &AllowedRanges) -> Result<Url, String> {
    if text.len() > MAX_URL_LEN {
        return Err(format!(
            "the URL is {} bytes long: at most {MAX_URL_LEN} are allowed",
            text.len()
        ));
    }
    let url = Url::parse(text).map_err(|e| {
        format!("the URL is not an absolute URL like https://example.com/hooks ({e})")
    })?;
    check_scheme(&url, https_only)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the URL may not carry a user name or password".into());
    }
    if url.fragment().is_some() {
        return Err("the URL may not have a fragment (a # part)".into());
    }
    check_host(&url, allowed)?;
    Ok(url)
}

fn check_scheme(url: &Url, https_only: bool) -> Result<(), String> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if !https_only => Ok(()),
        "http" => Err("the URL must use https: webhooks are sent over https only".into()),
        other if https_only => Err(format!("the URL's scheme is {other}: it must be https")),
        other => Err(format!(
            "the URL's scheme is {other}: it must be https or http"
        )),
    }
}

fn check_host(url: &Url, allowed: &AllowedRanges) -> Result<(), String> {
    let ip = match url.host() {
        None => return Err("the URL has no host".into()),
        Some(Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if name == "localhost" || name.ends_with(".localhost") {
                return Err(format!(
                    "the URL's host is {name}: webhooks may not reach the service's own machine"
                ));
            }
            return Ok(());
        }
        Some(Host::Ipv4(ip)) => ip.into(),
        Some(Host::Ipv6(ip)) => ip.into(),
    };
    match refusal(ip, allowed) {
        None => Ok(()),
        Some(reason) => Err(format!(
            "the URL's address is {reason}: webhooks may not reach inside the service's network"
        )),
    }
}

/// The event types an endpoint subscribes to, sorted and without repeats: 1 to
/// [`MAX_EVENT_TYPES`] of them, each one of `known`.
pub fn check_event_types(types: &[String], known: &[&str]) -> Result<Vec<String>, String> {
    if types.is_empty() {
        return Err(
            "name at least one event type to subscribe to: see GET /asyncapi.json for the list"
                .into(),
        );
    }
    if types.len() > MAX_EVENT_TYPES {
        return Err(format!(
            "{} event types are named: at most {MAX_EVENT_TYPES} are allowed",
            types.len()
        ));
    }
    if let Some(unknown) = types.iter().find(|t| !known.contains(&t.as_str())) {
        return Err(format!(
            "\"{unknown}\" is not an event type: see GET /asyncapi.json for the list"
        ));
    }
    let mut out = types.to_vec();
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests;
