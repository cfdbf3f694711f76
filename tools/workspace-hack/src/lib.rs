//! No code: this crate only fixes the features of the workspace's dependencies
//! (Cargo.toml says why).
