//! Rebuilds the crate when a migration is added or changed: `sqlx::migrate!` embeds
//! `migrations/` at compile time, and cargo would not otherwise notice a new file there.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
