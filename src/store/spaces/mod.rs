//! Spaces and their memberships: the spaces (`space`: created, read, listed, their settings
//! written), who holds which roles in each (`members`: listed by pages, put, removed), and
//! a caller's memberships, read once per request (`memberships`), whether a space exists
//! (`known`), and whether a caller may see
//! an item another request holds (`visibility`). Every write of a space's
//! settings or memberships adds a row to the space's own audit chain; a space's creation
//! joins the admin chain.

pub mod known;
pub mod members;
pub mod memberships;
pub mod space;
pub mod visibility;

pub use space::{SpaceActor, SpaceUpdate, SpaceWriteError};
