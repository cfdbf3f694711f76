//! Spaces and their memberships: the spaces, who holds which roles in each, and a caller's
//! memberships, read once per request.

pub mod known;
pub mod memberships;
