//! The checks of `[audit]` against `environment`: part of `Settings::validate`, each
//! problem naming its key. The key is checked as the JWT secret is: the public development
//! key and keys under 32 bytes are refused outside development.

use secrecy::ExposeSecret;

use super::{Settings, MIN_SECRET_BYTES};
use crate::store::DEV_AUDIT_KEY;

pub(super) fn check_audit(s: &Settings, bad: &mut impl FnMut(&'static str, &str)) {
    let key = s.audit.key.expose_secret();
    if s.environment.is_development() {
        if key.len() < 16 {
            bad("audit.key", "must be at least 16 bytes");
        }
    } else if key == DEV_AUDIT_KEY {
        let problem = "the development key may only be used with environment = \
                       \"development\"; set APP__AUDIT__KEY to a secret of your own (at \
                       least 32 bytes)";
        bad("audit.key", problem);
    } else if key.len() < MIN_SECRET_BYTES {
        bad(
            "audit.key",
            "must be at least 32 bytes outside environment = \"development\"",
        );
    }
    check_checkpoints(s, bad);
    if !s.audit.chain && !s.environment.allows_test_hooks() {
        let problem = "false (audit rows written without their links) is a benchmark's \
                       baseline: accepted only with environment = \"development\" or \"test\"";
        bad("audit.chain", problem);
    }
}

fn check_checkpoints(s: &Settings, bad: &mut impl FnMut(&'static str, &str)) {
    let every = s.audit.checkpoint_every.as_secs();
    if !(1..=86_400).contains(&every) {
        bad(
            "audit.checkpoint_secs",
            "must be between 1 and 86400 (a day)",
        );
    }
    let name = s.audit.checkpoint_collection.as_str();
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with("system.")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    if !ok {
        let problem = "must be a collection name of letters, digits, _ - . (at most 100, \
                       not system.*)";
        bad("audit.checkpoint_collection", problem);
    }
    if let Some(url) = &s.audit.checkpoint_url {
        let url = url.expose_secret();
        if !(url.starts_with("mongodb://") || url.starts_with("mongodb+srv://")) {
            bad(
                "audit.checkpoint_url",
                "must be a mongodb:// or mongodb+srv:// URL (or unset: mongo.url)",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use crate::config::{ConfigError, Settings};

    fn development() -> Settings {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
        Settings::load_with(&dir, &[("environment", "development")]).unwrap()
    }

    fn audit_problems(s: &Settings) -> Vec<&'static str> {
        match s.validate() {
            Ok(()) => vec![],
            Err(ConfigError::Invalid(ps)) => ps
                .into_iter()
                .map(|p| p.key)
                .filter(|k| k.starts_with("audit."))
                .collect(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn the_key_is_checked_as_the_jwt_secret_is_and_the_baseline_is_development_only() {
        let mut s = development();
        assert!(
            audit_problems(&s).is_empty(),
            "the development key in development"
        );
        s.audit.key = SecretString::from("short");
        assert_eq!(audit_problems(&s), ["audit.key"], "under 16 bytes");
        for environment in ["production", "test", "staging"] {
            let mut s = development();
            s.environment = environment.into();
            assert_eq!(audit_problems(&s), ["audit.key"], "{environment}: public");
            s.audit.key = SecretString::from("0123456789abcdef0123456789abcde");
            assert_eq!(audit_problems(&s), ["audit.key"], "{environment}: 31 bytes");
            s.audit.key = SecretString::from("0123456789abcdef0123456789abcdef");
            assert!(audit_problems(&s).is_empty(), "{environment}: 32 bytes");
            s.audit.chain = false;
            let refused: &[&str] = if environment == "test" {
                &[]
            } else {
                &["audit.chain"]
            };
            assert_eq!(audit_problems(&s), refused, "{environment}: chain off");
        }
    }

    #[test]
    fn checkpoint_settings_are_checked_by_key() {
        let mut s = development();
        assert_eq!(s.audit.checkpoint_every.as_secs(), 300, "the default");
        assert_eq!(s.audit.checkpoint_collection, "audit_checkpoints");
        assert!(s.audit.checkpoint_url.is_none());
        s.audit.checkpoint_every = std::time::Duration::ZERO;
        s.audit.checkpoint_collection = "system.x".into();
        s.audit.checkpoint_url = Some(SecretString::from("postgres://x"));
        assert_eq!(
            audit_problems(&s),
            [
                "audit.checkpoint_secs",
                "audit.checkpoint_collection",
                "audit.checkpoint_url"
            ]
        );
        s.audit.checkpoint_every = std::time::Duration::from_secs(86_400);
        s.audit.checkpoint_collection = "audit-cp.v1".into();
        s.audit.checkpoint_url = Some(SecretString::from("mongodb://elsewhere:27017"));
        assert!(audit_problems(&s).is_empty());
    }
}
