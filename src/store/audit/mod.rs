//! The audit chain in PostgreSQL: `[audit]` and its key (`chain`), how a document's rows link to
//! its head (`links`), linking rows that carry no link yet and the admin chain's rows as they are
//! written (`linking`), the admin chain's rows as the chain reads them (`admin`), the spaces'
//! own chains (`space_links`, `space_chains`), and the check (`heads`, `verify`).

pub(super) mod admin;
pub(super) mod chain;
pub(super) mod heads;
pub(super) mod linking;
pub(super) mod links;
pub(super) mod space_chains;
pub(super) mod space_links;
pub(super) mod verify;
