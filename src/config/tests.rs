//! Unit tests of `config`: the defaults, and that each problem names its key.

use std::time::Duration;

use secrecy::SecretString;

use super::*;
use crate::lock::{RedisMode, Ttl};

fn defaults() -> Settings {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut builder = config::Config::builder()
        .add_source(config::File::from(dir.join("default.toml")).required(true));
    builder = builder.set_override("environment", "development").unwrap();
    builder.build().unwrap().try_deserialize().unwrap()
}

/// The issuer and audience a deployment must name.
fn with_identity_provider(s: &mut Settings) {
    s.auth.issuer = Some("https://idp.example.com/realms/kb".into());
    s.auth.audience = Some("kh-review".into());
}

fn problems(s: &Settings) -> Vec<&'static str> {
    match s.validate() {
        Ok(()) => vec![],
        Err(ConfigError::Invalid(ps)) => ps.into_iter().map(|p| p.key).collect(),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn the_defaults_are_valid() {
    assert!(problems(&defaults()).is_empty());
}

#[test]
fn the_migrations_url_names_the_services_database_as_another_role() {
    let mut s = defaults();
    s.database.url = SecretString::from("postgres://kh_app:a@db.example:5432/kb?sslmode=require");
    s.database.migrate_url = Some(SecretString::from("postgres://kh:b@db.example:5432/kb"));
    assert!(
        problems(&s).is_empty(),
        "only the role (and parameters) differ"
    );
    for other in [
        "postgres://kh:b@db.example:5432/another",
        "postgres://kh:b@replica.example:5432/kb",
        "postgres://kh:b@db.example:6432/kb",
        "mysql://kh:b@db.example:5432/kb",
    ] {
        s.database.migrate_url = Some(SecretString::from(other));
        assert_eq!(problems(&s), ["database.migrate_url"], "{other}");
    }
}

#[test]
fn each_problem_names_its_key() {
    let mut s = defaults();
    s.database.url = SecretString::from("mysql://x");
    s.lock.ttl = Ttl::new(Duration::from_millis(1)).unwrap();
    assert_eq!(
        problems(&s),
        ["database.url", "redis.op_timeout_ms"],
        "bad URL, and the Redis timeout no longer below ttl/3"
    );
    let mut s = defaults();
    s.lock.renew_interval = Some(s.lock.ttl.as_duration());
    assert_eq!(problems(&s), ["lock.renew_interval_ms"]);
    let mut s = defaults();
    s.environment = "production".into();
    with_identity_provider(&mut s);
    s.audit.key = SecretString::from(OWN_SECRET);
    assert_eq!(
        problems(&s),
        ["auth.jwt_secret"],
        "the development secret outside development"
    );
    s.auth.jwt_secret = SecretString::from("a-real-production-secret-of-32-bytes+");
    s.server.test_hooks = true;
    assert_eq!(problems(&s), ["server.test_hooks"]);
    let mut s = defaults();
    s.server.workers_setting = Some(0);
    assert_eq!(problems(&s), ["server.workers"]);
    let mut s = defaults();
    s.server.json_limit_bytes = 1024 * 1024;
    assert_eq!(
        problems(&s),
        ["server.json_limit_bytes"],
        "a limit below the largest body the schema allows"
    );
    let mut s = defaults();
    s.server.probe_cache = std::time::Duration::from_secs(61);
    assert_eq!(problems(&s), ["server.probe_cache_ms"]);
    let mut s = defaults();
    s.lock.degraded_per_key = 0;
    assert_eq!(problems(&s), ["lock.degraded_per_key"]);
}

/// A zero TTL cannot be a `Ttl`: loading one fails, naming its key.
#[test]
fn a_zero_lock_ttl_is_refused_at_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let overrides = [("environment", "development"), ("lock.ttl_ms", "0")];
    let e = Settings::load_with(&dir, &overrides)
        .unwrap_err()
        .to_string();
    assert!(e.contains("lock.ttl_ms"), "{e}");
    assert!(e.contains("no permanent locks"), "{e}");
}

#[test]
fn topology_settings_are_checked_for_each_mode() {
    let mut s = defaults();
    s.redis.mode = RedisMode::Cluster;
    assert_eq!(problems(&s), ["redis.nodes"], "cluster mode without nodes");
    s.redis.nodes = vec![SecretString::from("http://10.0.0.1:6379")];
    assert_eq!(problems(&s), ["redis.nodes"], "not a redis URL");
    s.redis.nodes = vec![SecretString::from("rediss://:pw@10.0.0.1:6379")];
    assert!(problems(&s).is_empty());
    s.redis.mode = RedisMode::Sentinel;
    assert_eq!(problems(&s), ["redis.sentinels", "redis.master_name"]);
    s.redis.sentinels = vec![SecretString::from("redis://10.0.0.1:26379")];
    s.redis.master_name = "kh-master".into();
    assert!(problems(&s).is_empty());
    s.redis.key_prefix = "kh:{x}:".into();
    assert_eq!(
        problems(&s),
        ["redis.key_prefix"],
        "braces break the hash tag"
    );
    let mut s = defaults();
    s.amqp.urls.clear();
    assert_eq!(problems(&s), ["amqp.urls"]);
    s.mongo.write_concern = "0".into();
    s.mongo.read_preference = "secondaryish".into();
    assert_eq!(
        problems(&s),
        ["amqp.urls", "mongo.write_concern", "mongo.read_preference"]
    );
    s.mongo.write_concern = "2".into();
    s.mongo.read_preference = "secondaryPreferred".into();
    assert_eq!(problems(&s), ["amqp.urls"]);
    let unknown = RedisMode::try_from("replicated".to_string()).unwrap_err();
    assert!(unknown.starts_with("redis.mode: "), "{unknown}");
    let unknown = crate::outbox::QueueType::try_from("lazy".to_string()).unwrap_err();
    assert!(unknown.starts_with("amqp.bind_queue_type: "), "{unknown}");
}

#[test]
fn http_workers_default_to_half_the_cores_and_follow_the_setting() {
    let mut s = defaults();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(s.server.workers(), (cores / 2).max(1));
    s.server.workers_setting = Some(3);
    assert_eq!(s.server.workers(), 3);
}

#[test]
fn the_error_lists_every_problem_without_secrets() {
    let mut s = defaults();
    s.environment = "staging".into();
    s.amqp.urls = vec![SecretString::from("http://user:hunter2@host")];
    let text = s.validate().unwrap_err().to_string();
    assert!(
        text.contains("amqp.urls") && text.contains("auth.jwt_secret"),
        "{text}"
    );
    assert!(
        !text.contains("hunter2"),
        "no secret in the message: {text}"
    );
}

#[test]
fn renewal_defaults_to_a_third_of_the_ttl() {
    let mut s = defaults();
    s.lock.ttl = Ttl::new(Duration::from_millis(900)).unwrap();
    s.lock.renew_interval = None;
    assert_eq!(s.lock.renew_every(), Duration::from_millis(300));
}

#[test]
fn issuer_and_audience_are_optional_but_not_empty() {
    let mut s = defaults();
    s.auth.issuer = Some("https://idp.example.com/".into());
    s.auth.audience = Some("kh-review".into());
    assert!(problems(&s).is_empty());
    s.auth.issuer = Some(" ".into());
    s.auth.audience = Some(String::new());
    assert_eq!(problems(&s), ["auth.issuer", "auth.audience"]);
}

const OWN_SECRET: &str = "0123456789abcdef0123456789abcdef";

#[test]
fn the_built_in_environment_is_production() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let text = std::fs::read_to_string(dir.join("default.toml")).unwrap();
    let loaded = |text: &str| -> Settings {
        config::Config::builder()
            .add_source(config::File::from_str(text, config::FileFormat::Toml))
            .build()
            .unwrap()
            .try_deserialize()
            .unwrap()
    };
    let s = loaded(&text);
    assert_eq!(s.environment, "production", "config/default.toml");
    assert_eq!(
        problems(&s),
        [
            "auth.jwt_secret",
            "auth.issuer",
            "auth.audience",
            "audit.key"
        ],
        "its public secrets are refused, and issuer and audience are required"
    );
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("environment"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(loaded(&without).environment, "production", "no key at all");
}

#[test]
fn outside_development_the_secret_is_your_own_and_32_bytes() {
    for environment in ["production", "test", "staging"] {
        let mut s = defaults();
        s.environment = environment.into();
        with_identity_provider(&mut s);
        s.audit.key = SecretString::from(OWN_SECRET);
        assert_eq!(problems(&s), ["auth.jwt_secret"], "{environment}: public");
        s.auth.jwt_secret = SecretString::from(&OWN_SECRET[..31]);
        assert_eq!(problems(&s), ["auth.jwt_secret"], "{environment}: 31 bytes");
        s.auth.jwt_secret = SecretString::from(OWN_SECRET);
        assert!(problems(&s).is_empty(), "{environment}: 32 bytes");
    }
    let mut s = defaults();
    s.auth.jwt_secret = SecretString::from(&OWN_SECRET[..16]);
    assert!(problems(&s).is_empty(), "development takes 16 bytes");
    s.auth.jwt_secret = SecretString::from(&OWN_SECRET[..15]);
    assert_eq!(problems(&s), ["auth.jwt_secret"]);
}

#[test]
fn test_hooks_need_development_or_test() {
    for (environment, allowed) in [
        ("development", true),
        ("test", true),
        ("production", false),
        ("staging", false),
    ] {
        let mut s = defaults();
        s.environment = environment.into();
        s.auth.jwt_secret = SecretString::from(OWN_SECRET);
        s.audit.key = SecretString::from(OWN_SECRET);
        with_identity_provider(&mut s);
        assert!(!s.test_hooks(), "off unless turned on");
        s.server.test_hooks = true;
        assert_eq!(s.test_hooks(), allowed, "{environment}");
        let expected: &[&str] = if allowed { &[] } else { &["server.test_hooks"] };
        assert_eq!(problems(&s), expected, "{environment}");
    }
}

#[test]
fn outbox_parking_needs_at_least_one_attempt_and_a_message_size() {
    let mut s = defaults();
    assert_eq!(s.outbox.max_attempts, 60);
    s.outbox.max_attempts = 0;
    s.amqp.max_message_bytes = 0;
    assert_eq!(
        problems(&s),
        ["outbox.max_attempts", "amqp.max_message_bytes"]
    );
}

/// A zero timeout turns actix's timer off, and one under its clock's 500 ms may never fire:
/// either way a client could hold a connection for ever.
#[test]
fn client_timeouts_are_refused_when_they_could_never_fire() {
    let mut s = defaults();
    s.server.body_timeout = Duration::ZERO;
    s.server.client_request_timeout = Duration::ZERO;
    s.server.keep_alive = Duration::from_millis(999);
    s.server.client_disconnect_timeout = Duration::from_millis(200);
    assert_eq!(
        problems(&s),
        [
            "server.body_timeout_ms",
            "server.client_request_timeout_ms",
            "server.keep_alive_ms",
            "server.client_disconnect_timeout_ms"
        ]
    );
}

#[test]
fn a_jwks_goes_with_public_key_algorithms_over_https() {
    use jsonwebtoken::Algorithm;
    let mut s = defaults();
    s.auth.algorithms = vec![Algorithm::RS256];
    assert_eq!(problems(&s), ["auth.jwks_url"], "RS256 without a JWKS");
    s.auth.jwks_url = Some("http://127.0.0.1:9/certs".into());
    assert!(problems(&s).is_empty(), "http in development");
    s.auth.algorithms = vec![Algorithm::HS256];
    assert_eq!(problems(&s), ["auth.algorithms"], "a JWKS but only HS256");
    s.auth.algorithms.clear();
    assert_eq!(problems(&s), ["auth.algorithms", "auth.algorithms"]);
    let mut s = defaults();
    s.environment = "staging".into();
    s.audit.key = SecretString::from(OWN_SECRET);
    s.auth.issuer = Some("https://idp.example.com/".into());
    s.auth.audience = Some("kh-review".into());
    s.auth.algorithms = vec![Algorithm::RS256, Algorithm::ES256];
    s.auth.jwks_url = Some("http://idp.example.com/certs".into());
    assert_eq!(
        problems(&s),
        ["auth.jwks_url"],
        "http outside development and test; the development secret is unused without HS256"
    );
    s.auth.jwks_url = Some("https://idp.example.com/certs".into());
    assert!(problems(&s).is_empty());
    s.auth.jwks_min_refresh = Duration::ZERO;
    s.auth.jwks_refresh = Some(Duration::ZERO);
    s.auth.jwks_timeout = Duration::ZERO;
    s.auth.jwks_max_fresh = Duration::ZERO;
    assert_eq!(
        problems(&s),
        [
            "auth.jwks_min_refresh_secs",
            "auth.jwks_refresh_secs",
            "auth.jwks_max_fresh_secs",
            "auth.jwks_timeout_ms"
        ]
    );
    s.auth.jwks_max_fresh = Duration::from_secs(86_401);
    assert!(problems(&s).contains(&"auth.jwks_max_fresh_secs"));
}

#[test]
fn a_deployment_needs_an_issuer_and_an_audience() {
    for environment in ["production", "staging"] {
        let mut s = defaults();
        s.environment = environment.into();
        s.auth.jwt_secret = SecretString::from(OWN_SECRET);
        s.audit.key = SecretString::from(OWN_SECRET);
        let text = s.validate().unwrap_err().to_string();
        assert_eq!(problems(&s), ["auth.issuer", "auth.audience"], "{text}");
        assert!(text.contains("APP__AUTH__ISSUER"), "{text}");
        with_identity_provider(&mut s);
        assert!(problems(&s).is_empty(), "{environment}");
    }
    for environment in ["development", "test"] {
        let mut s = defaults();
        s.environment = environment.into();
        s.auth.jwt_secret = SecretString::from(OWN_SECRET);
        s.audit.key = SecretString::from(OWN_SECRET);
        assert!(problems(&s).is_empty(), "{environment}: not required");
    }
    let mut s = defaults();
    s.auth.max_token_lifetime = Duration::ZERO;
    assert_eq!(problems(&s), ["auth.max_token_lifetime_secs"]);
}

#[test]
fn retention_and_required_queues_are_checked() {
    let mut s = defaults();
    assert!(s.amqp.required_queues.is_empty(), "off by default");
    assert_eq!(s.outbox.purge_batch, 1000);
    s.outbox.purge_batch = 0;
    s.outbox.purge_interval = Duration::ZERO;
    assert_eq!(
        problems(&s),
        ["outbox.purge_batch", "outbox.purge_interval_ms"]
    );
    let mut s = defaults();
    for bad in [vec![""], vec!["a", "a"], vec!["kh.document.events.archive"]] {
        s.amqp.required_queues = bad.iter().map(|q| q.to_string()).collect();
        assert_eq!(problems(&s), ["amqp.required_queues"], "{bad:?}");
    }
    s.amqp.required_queues = vec!["search-indexer".into(), "audit-sink".into()];
    assert!(problems(&s).is_empty());
}
