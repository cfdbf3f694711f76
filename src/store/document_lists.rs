//! Lists of documents, newest first (ids are UUIDv7), without their bodies (`body` empty):
//! an author's own, in the spaces where it still has a role; and a space's, as far as its
//! reader may read them, optionally in one status and whose title contains a query.
//!
//! Each statement keeps to one index whatever its values, since prepared statements run on
//! a generic plan: an author's list reads `documents_by_author(_status)`; a space's reads
//! `documents_by_space(_status)` backwards and stops at the page's end; a title search
//! that holds a trigram reads `documents_title_keys` (a key per space and trigram, through
//! `kh_title_page`, which row-level security needs), then the page's rows by key. A
//! query without a trigram is matched with `strpos`, which no index serves, so that the
//! trigram index is never asked to read every entry it holds (see `domain::search`).

use uuid::Uuid;

use super::error::StoreError;
use super::pg::{PgStore, Statement};
use crate::domain::{Document, DocumentStatus, FencingToken, TitleQuery};

/// Which documents of a space a page lists.
#[derive(Debug, Clone, Copy)]
pub struct SpaceDocuments<'a> {
    pub space: &'a str,
    /// Who reads: a document never submitted is listed only when it is its own...
    pub reader: &'a str,
    /// ... unless it administers the space (a space admin, the platform admin).
    pub every_draft: bool,
    pub status: Option<DocumentStatus>,
    pub title: Option<&'a TitleQuery>,
    /// Created before this document (the last one of the previous page).
    pub before: Option<Uuid>,
    pub limit: i64,
}

impl PgStore {
    /// `author`'s documents, newest first, in `status` when given, created before the
    /// document `before` when given, in the spaces `spaces` (`None`: every space); without
    /// their bodies. Each form has its index: `documents_by_author` and
    /// `documents_by_author_status` (the spaces are a filter: an author's documents are
    /// mostly in spaces where it still has a role).
    pub async fn author_documents(
        &self,
        author: &str,
        spaces: Option<&[String]>,
        status: Option<DocumentStatus>,
        before: Option<Uuid>,
        limit: i64,
    ) -> Result<Vec<Document>, StoreError> {
        let before = before.unwrap_or(Uuid::max());
        match status {
            None => {
                sqlx::query_as!(
                    Document,
                    r#"SELECT id, title, '' AS "body!", status AS "status: DocumentStatus", version,
                          author_id, space_id AS space, current_review_id, policy, fence_token AS "fence_token: FencingToken",
                          created_at, updated_at, published_version,
                          NULL::text AS published_title, NULL::text AS published_body, contributors,
                      verify_by
                   FROM documents
                   WHERE author_id = $1 AND id < $2
                     AND ($4::text[] IS NULL OR space_id = ANY($4))
                   ORDER BY id DESC LIMIT $3"#,
                    author,
                    before,
                    limit,
                    spaces
                )
                .fetch_all(&mut *self.scoped().await?)
                .bounded(self)
                .await
            }
            Some(status) => {
                sqlx::query_as!(
                    Document,
                    r#"SELECT id, title, '' AS "body!", status AS "status: DocumentStatus", version,
                          author_id, space_id AS space, current_review_id, policy, fence_token AS "fence_token: FencingToken",
                          created_at, updated_at, published_version,
                          NULL::text AS published_title, NULL::text AS published_body, contributors,
                      verify_by
                   FROM documents
                   WHERE author_id = $1 AND status = $2 AND id < $3
                     AND ($5::text[] IS NULL OR space_id = ANY($5))
                   ORDER BY id DESC LIMIT $4"#,
                    author,
                    status as DocumentStatus,
                    before,
                    limit,
                    spaces
                )
                .fetch_all(&mut *self.scoped().await?)
                .bounded(self)
                .await
            }
        }
    }

    /// A page of a space's documents (see [`SpaceDocuments`]), newest first.
    pub async fn space_documents(
        &self,
        l: SpaceDocuments<'_>,
    ) -> Result<Vec<Document>, StoreError> {
        match (l.title, l.status) {
            (Some(q), status) if q.has_trigram() => self.space_title_search(l, q, status).await,
            (q, None) => self.space_page(l, q).await,
            (q, Some(status)) => self.space_status_page(l, q, status).await,
        }
    }

    /// Reads `documents_by_space` backwards; `q` (without a trigram) a filter.
    async fn space_page(
        &self,
        l: SpaceDocuments<'_>,
        q: Option<&TitleQuery>,
    ) -> Result<Vec<Document>, StoreError> {
        sqlx::query_as!(
            Document,
            r#"SELECT id, title, '' AS "body!", status AS "status: DocumentStatus", version,
                      author_id, space_id AS space, current_review_id, policy, fence_token AS "fence_token: FencingToken",
                      created_at, updated_at, published_version,
                      NULL::text AS published_title, NULL::text AS published_body, contributors,
                      verify_by
               FROM documents
               WHERE space_id = $1 AND id < $2
                 AND ($3::bool OR current_review_id IS NOT NULL OR author_id = $4)
                 AND ($6::text IS NULL OR strpos(lower(title), lower($6)) > 0)
               ORDER BY id DESC LIMIT $5"#,
            l.space,
            l.before.unwrap_or(Uuid::max()),
            l.every_draft,
            l.reader,
            l.limit,
            q.map(TitleQuery::as_str)
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await
    }

    /// Reads `documents_by_space_status` backwards; `q` (without a trigram) a filter.
    async fn space_status_page(
        &self,
        l: SpaceDocuments<'_>,
        q: Option<&TitleQuery>,
        status: DocumentStatus,
    ) -> Result<Vec<Document>, StoreError> {
        sqlx::query_as!(
            Document,
            r#"SELECT id, title, '' AS "body!", status AS "status: DocumentStatus", version,
                      author_id, space_id AS space, current_review_id, policy, fence_token AS "fence_token: FencingToken",
                      created_at, updated_at, published_version,
                      NULL::text AS published_title, NULL::text AS published_body, contributors,
                      verify_by
               FROM documents
               WHERE space_id = $1 AND status = $7 AND id < $2
                 AND ($3::bool OR current_review_id IS NOT NULL OR author_id = $4)
                 AND ($6::text IS NULL OR strpos(lower(title), lower($6)) > 0)
               ORDER BY id DESC LIMIT $5"#,
            l.space,
            l.before.unwrap_or(Uuid::max()),
            l.every_draft,
            l.reader,
            l.limit,
            q.map(TitleQuery::as_str),
            status as DocumentStatus
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await
    }

    /// The titles that contain `q` (which holds a trigram): the page's ids by
    /// `documents_title_keys` (a key per space and trigram of a title), through
    /// `kh_title_page` (under row-level security a `LIKE` may not use the index: the
    /// function runs it as the owner, for a space the transaction declared only, and cuts
    /// the page where it reads the matches), then their rows by key, the page's conditions
    /// checked again under the policies; `\` escapes `LIKE`'s wildcards in the pattern.
    async fn space_title_search(
        &self,
        l: SpaceDocuments<'_>,
        q: &TitleQuery,
        status: Option<DocumentStatus>,
    ) -> Result<Vec<Document>, StoreError> {
        sqlx::query_as!(
            Document,
            r#"SELECT id, title, '' AS "body!", status AS "status: DocumentStatus", version,
                      author_id, space_id AS space, current_review_id, policy, fence_token AS "fence_token: FencingToken",
                      created_at, updated_at, published_version,
                      NULL::text AS published_title, NULL::text AS published_body, contributors,
                      verify_by
               FROM documents
               WHERE id = ANY(ARRAY(SELECT kh_title_page($1, $6, $2, $3, $4, $7, $5)))
                 AND space_id = $1 AND id < $2
                 AND ($3::bool OR current_review_id IS NOT NULL OR author_id = $4)
                 AND ($7::text IS NULL OR status = $7)
               ORDER BY id DESC LIMIT $5"#,
            l.space,
            l.before.unwrap_or(Uuid::max()),
            l.every_draft,
            l.reader,
            l.limit,
            q.like_pattern(),
            status as Option<DocumentStatus>
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await
    }
}
