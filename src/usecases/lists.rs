//! The lists a caller reads, each within the spaces where it has a role: a space's documents
//! (what it may read there, optionally whose title contains a query), its own documents (in
//! the spaces where it still has a role), and the review queue of the spaces where it is a
//! reviewer. A space where the caller has no role does not exist for it (404), nor does a
//! space of no such key for the platform admin.

use uuid::Uuid;

use crate::domain::{
    Access, Document, DocumentStatus, Reader, Refusal, Review, SpaceKey, SpaceRole, SpaceRoles,
    TitleQuery,
};
use crate::store::{PgStore, QueueFilter, SpaceDocuments};

use super::documents::DocumentService;
use super::error::Error;
use super::reviews::service::ReviewService;

/// A page of a list of documents: in one status when given, created before the document
/// `before` when given (the last one of the previous page), at most `limit`.
#[derive(Debug, Clone, Copy)]
pub struct DocumentsPage {
    pub status: Option<DocumentStatus>,
    pub before: Option<Uuid>,
    pub limit: i64,
}

/// The caller's roles in `space`; not found when it has none there, or (the platform
/// admin, who has every role in every space) when no space has this key.
async fn space_roles(
    store: &PgStore,
    access: &Access,
    space: &SpaceKey,
) -> Result<SpaceRoles, Error> {
    let roles = access.roles_in(space.as_str());
    let exists = !roles.is_empty()
        && (!access.is_platform_admin() || store.space_exists(space.as_str()).await?);
    if exists {
        Ok(roles)
    } else {
        Err(Refusal::NotFound.into())
    }
}

impl DocumentService {
    /// `reader`'s own documents, newest first (without bodies), in the spaces where it still
    /// has a role (a member removed from a space no longer lists what it wrote there).
    pub async fn by_author(
        &self,
        reader: Reader<'_>,
        page: DocumentsPage,
    ) -> Result<Vec<Document>, Error> {
        let spaces: Option<Vec<String>> = (!reader.access.is_platform_admin()).then(|| {
            reader
                .access
                .memberships()
                .map(|(space, _)| space.to_string())
                .collect()
        });
        Ok(self
            .store
            .author_documents(
                reader.id.as_str(),
                spaces.as_deref(),
                page.status,
                page.before,
                page.limit,
            )
            .await?)
    }

    /// The documents of `space` that `reader` may read (a document never submitted: only
    /// its own, unless it administers the space), newest first (without bodies), whose
    /// title contains `title` when given; not found without a role in the space.
    pub async fn in_space(
        &self,
        reader: Reader<'_>,
        space: &SpaceKey,
        title: Option<&TitleQuery>,
        page: DocumentsPage,
    ) -> Result<Vec<Document>, Error> {
        space_roles(&self.store, reader.access, space).await?;
        let listing = SpaceDocuments {
            space: space.as_str(),
            reader: reader.id.as_str(),
            every_draft: reader.administers(space.as_str()),
            status: page.status,
            title,
            before: page.before,
            limit: page.limit,
        };
        Ok(self.store.space_documents(listing).await?)
    }
}

impl ReviewService {
    /// A page of the queue of the spaces where `access` is a reviewer (the platform admin:
    /// every space), or of `space` alone: not found without a role there, forbidden with
    /// roles but not reviewer. `None`: the cursor names no review.
    pub async fn list(
        &self,
        access: &Access,
        space: Option<&SpaceKey>,
        filter: &QueueFilter,
    ) -> Result<Option<Vec<Review>>, Error> {
        let spaces = match space {
            Some(key) => {
                let roles = space_roles(&self.store, access, key).await?;
                if !roles.contains(SpaceRole::Reviewer) {
                    return Err(Refusal::Forbidden(
                        "the review queue of a space needs the reviewer role there",
                    )
                    .into());
                }
                Some(vec![key.as_str().to_string()])
            }
            None => access.spaces_with(SpaceRole::Reviewer),
        };
        if spaces.as_ref().is_some_and(Vec::is_empty) {
            return Err(Refusal::Forbidden("the review queue needs the reviewer role").into());
        }
        Ok(self.store.list_reviews(filter, spaces.as_deref()).await?)
    }
}
