//! Empty: cargo builds a package's `[build-dependencies]` only when it has a build script,
//! and this crate's host-side entries (Cargo.toml) must be built to count.

fn main() {}
