//! `environment`: where the service runs, and what that allows.

use serde::Deserialize;

/// Where the service runs (`environment`). Only `development` and `test` relax anything;
/// any other name (`production`, the default, or `staging`, ...) gets production's checks.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum Environment {
    /// A developer's machine: the public development secret, test hooks, `kh-review token`.
    Development,
    /// Test runs: test hooks.
    Test,
    /// Production, or another deployment by its name.
    Deployed(String),
}

impl Environment {
    pub fn as_str(&self) -> &str {
        match self {
            Environment::Development => "development",
            Environment::Test => "test",
            Environment::Deployed(name) => name,
        }
    }

    pub fn is_development(&self) -> bool {
        *self == Environment::Development
    }

    /// A deployment (`production`, the default, or any other name): issuer and audience are
    /// required there.
    pub fn is_deployed(&self) -> bool {
        matches!(self, Environment::Deployed(_))
    }

    /// Whether test hooks may be turned on here.
    pub fn allows_test_hooks(&self) -> bool {
        matches!(self, Environment::Development | Environment::Test)
    }
}

impl Default for Environment {
    fn default() -> Self {
        Environment::Deployed("production".to_string())
    }
}

impl From<String> for Environment {
    fn from(name: String) -> Self {
        match name.as_str() {
            "development" => Environment::Development,
            "test" => Environment::Test,
            _ => Environment::Deployed(name),
        }
    }
}

impl From<&str> for Environment {
    fn from(name: &str) -> Self {
        Environment::from(name.to_string())
    }
}

impl PartialEq<&str> for Environment {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
