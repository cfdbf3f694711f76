//! Statements on `documents`: create, read, lock, and write a planned change; and the edit,
//! the one change to a document that is not a review transition.

use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::error::{violates, StoreError, WriteError};
use super::pg::{PgStore, Statement};
use super::tx::{write_audit_and_event, Link, Uncommitted, WriteContext};
use crate::domain::rules::{self, DocumentChange, Publication, Verify};
use crate::domain::{
    Command, Document, DocumentBody, DocumentStatus, DocumentTitle, FencingToken, Locked, Reader,
    Refusal, SpaceKey,
};
use crate::store::audit::links::{Head, LockedDocument};

/// The refusal of a write that named a policy that does not exist (the foreign key of
/// `documents.policy`), or the error as it was.
/// The policy of a new document: the one its request `named`, else its space's default
/// policy, else `fallback` (the setting `review.default_policy`).
#[derive(Debug, Clone, Copy)]
pub struct NewPolicy<'a> {
    pub named: Option<&'a str>,
    pub fallback: &'a str,
}

fn unknown_policy(e: sqlx::Error, policy: &str) -> WriteError {
    if violates(&e, "documents_policy_fkey") {
        Refusal::UnknownPolicy(policy.to_string()).into()
    } else {
        e.into()
    }
}

impl PgStore {
    /// Inserts a DRAFT document (version 1) following `policy` with its audit and outbox
    /// rows, uncommitted.
    #[tracing::instrument(level = "debug", skip_all, fields(document_id = %id))]
    pub async fn write_create(
        &self,
        id: Uuid,
        title: DocumentTitle,
        body: DocumentBody,
        space: &SpaceKey,
        policy: NewPolicy<'_>,
        ctx: &WriteContext<'_>,
    ) -> Result<Uncommitted<Document>, WriteError> {
        let new = rules::plan_create(id, title, body);
        let mut tx = self.begin().await?;
        // The policy named, else the space's default policy, else the setting's.
        let row = sqlx::query!(
            "INSERT INTO documents (id, title, body, status, version, author_id, space_id, policy) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, \
                     COALESCE($8, (SELECT default_policy FROM spaces WHERE key = $7), $9)) \
             RETURNING policy, created_at, updated_at",
            new.id,
            new.title.as_str(),
            new.body.as_str(),
            new.status as DocumentStatus,
            new.version,
            ctx.actor.as_str(),
            space.as_str(),
            policy.named,
            policy.fallback,
        )
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| {
            if violates(&e, "documents_space_fk") {
                Refusal::NotFound.into()
            } else {
                unknown_policy(e, policy.named.unwrap_or(policy.fallback))
            }
        })?;
        let doc = Document {
            id: new.id,
            title: new.title.into_string(),
            body: new.body.into_string(),
            status: new.status,
            version: new.version,
            author_id: ctx.actor.as_str().to_string(),
            space: space.as_str().to_string(),
            current_review_id: None,
            policy: row.policy,
            fence_token: None,
            created_at: row.created_at,
            updated_at: row.updated_at,
            published_version: None,
            published_title: None,
            published_body: None,
            contributors: Vec::new(),
            verify_by: None,
        };
        let head = Head {
            count: 0,
            hash: None,
            now: row.created_at,
        };
        let link = self
            .audit
            .at(head)
            .link(doc.id, &new.audit, doc.version, ctx);
        let at = doc.updated_at;
        let owned =
            write_audit_and_event(&mut tx, &doc, &new.audit, &new.outbox, ctx, at, &link).await?;
        Ok(Uncommitted::new(tx, doc, owned).in_space(|d| d.space.clone()))
    }

    /// The document as committed, if it exists.
    pub async fn document(&self, id: Uuid) -> Result<Option<Document>, StoreError> {
        sqlx::query_as!(
            Document,
            r#"SELECT id, title, body, status AS "status: DocumentStatus", version, author_id,
                      space_id AS space, current_review_id, policy, fence_token AS "fence_token: FencingToken",
                      created_at, updated_at, published_version, published_title, published_body,
                      contributors, verify_by
               FROM documents WHERE id = $1"#,
            id
        )
        .fetch_optional(&mut *self.scoped().await?)
        .bounded(self)
        .await
    }

    /// The documents of `ids` as committed, in no particular order (missing ones left out).
    pub async fn documents(&self, ids: &[Uuid]) -> Result<Vec<Document>, StoreError> {
        sqlx::query_as!(
            Document,
            r#"SELECT id, title, body, status AS "status: DocumentStatus", version, author_id,
                      space_id AS space, current_review_id, policy, fence_token AS "fence_token: FencingToken",
                      created_at, updated_at, published_version, published_title, published_body,
                      contributors, verify_by
               FROM documents WHERE id = ANY($1)"#,
            ids
        )
        .fetch_all(&mut *self.scoped().await?)
        .bounded(self)
        .await
    }

    /// The titles of the documents of `ids` (missing ones left out).
    pub async fn document_titles(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>, StoreError> {
        let rows = sqlx::query!("SELECT id, title FROM documents WHERE id = ANY($1)", ids)
            .fetch_all(&mut *self.scoped().await?)
            .bounded(self)
            .await?;
        Ok(rows.into_iter().map(|r| (r.id, r.title)).collect())
    }

    /// Edits title and/or body under the row lock, as the rules allow; uncommitted.
    #[tracing::instrument(level = "debug", skip_all, fields(document_id = %id))]
    pub async fn write_edit(
        &self,
        id: Uuid,
        title: Option<DocumentTitle>,
        body: Option<DocumentBody>,
        policy: Option<String>,
        ctx: &WriteContext<'_>,
    ) -> Result<Uncommitted<Document>, WriteError> {
        let mut tx = self.begin().await?;
        let (document, head) = lock_document(&mut tx, id).await?.unzip();
        // The lease as it is now, under the document's row lock: an edit that passes it
        // commits before any later holder's edit can start.
        let lease = match document {
            Some(_) => super::lease_row::read_lease(&mut tx, id).await?,
            None => None,
        };
        let locked = Locked {
            document,
            lease,
            ..Locked::default()
        };
        let command = Command::Edit {
            title,
            body,
            policy,
        };
        let plan =
            rules::plan_conditional(&locked, ctx.reader(), command, ctx.guard, ctx.conditions)?;
        let before = planned_document(locked.document)?;
        let change = plan
            .document
            .ok_or_else(|| anyhow::anyhow!("an edit that changes no document"))?;
        let policy = change.policy.clone().unwrap_or_default();
        let head = head.ok_or_else(|| anyhow::anyhow!("an edit without a chain head"))?;
        let link = self
            .audit
            .at(head)
            .link(id, &plan.audit, change.version, ctx)
            .moved_with_document();
        let doc = write_document(&mut tx, before, change, &link)
            .await
            .map_err(|e| unknown_policy(e, &policy))?;
        let at = doc.updated_at;
        let owned =
            write_audit_and_event(&mut tx, &doc, &plan.audit, &plan.outbox, ctx, at, &link).await?;
        Ok(Uncommitted::new(tx, doc, owned).in_space(|d| d.space.clone()))
    }
}

/// The document row, locked for the rest of the transaction, with its chain head (`None`:
/// no such document).
pub(super) async fn lock_document(
    tx: &mut Transaction<'static, Postgres>,
    id: Uuid,
) -> Result<Option<(Document, Head)>, StoreError> {
    Ok(locked_document(tx, id, None)
        .await?
        .map(LockedDocument::split))
}

/// The document row locked, and the document of `review` beside it (the row lock covers
/// the document alone; a review never changes document).
pub(super) async fn locked_document(
    tx: &mut Transaction<'static, Postgres>,
    id: Uuid,
    review: Option<Uuid>,
) -> Result<Option<LockedDocument>, StoreError> {
    Ok(sqlx::query_as!(
        LockedDocument,
        r#"SELECT id, title, body, status AS "status: DocumentStatus", version, author_id,
                  space_id AS space, current_review_id, policy, fence_token AS "fence_token: FencingToken",
                  created_at, updated_at, published_version, published_title, published_body,
                  contributors, verify_by, audit_count, audit_head, now() AS "now!",
                  current_setting('kh.memberships', true) AS memberships,
                  (SELECT r.document_id FROM reviews r WHERE r.id = $2) AS review_document
           FROM documents WHERE id = $1 FOR UPDATE"#,
        id,
        review
    )
    .fetch_optional(&mut **tx)
    .await?)
}

/// Locks the document of a review (the review itself is only read), if the review exists,
/// with its chain head.
pub(super) async fn lock_document_of_review(
    tx: &mut Transaction<'static, Postgres>,
    review_id: Uuid,
) -> Result<Option<(Document, Head)>, StoreError> {
    let row = sqlx::query_as!(
        LockedDocument,
        r#"SELECT id, title, body, status AS "status: DocumentStatus", version, author_id,
                  space_id AS space, current_review_id, policy, fence_token AS "fence_token: FencingToken",
                  created_at, updated_at, published_version, published_title, published_body,
                  contributors, verify_by, audit_count, audit_head, now() AS "now!",
                  NULL::text AS memberships, NULL::uuid AS review_document
           FROM documents
           WHERE id = (SELECT document_id FROM reviews WHERE id = $1) FOR UPDATE"#,
        review_id
    )
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(LockedDocument::split))
}

/// The locked document a successful plan was made on.
pub(super) fn planned_document(document: Option<Document>) -> Result<Document, StoreError> {
    document.ok_or_else(|| anyhow::anyhow!("the rules planned a change without a document").into())
}

/// Writes the planned state of the document row, its chain head moved to `link`; returns
/// the row as it now is.
pub(super) async fn write_document(
    tx: &mut Transaction<'static, Postgres>,
    before: Document,
    change: DocumentChange,
    link: &Link,
) -> Result<Document, sqlx::Error> {
    let title = change.title.as_ref().map(DocumentTitle::as_str);
    let body = change.body.as_ref().map(DocumentBody::as_str);
    let publication = publication(change.published);
    let (verify, verify_by) = verification(change.verify);
    // The published revision moves in the same statement: an approval publishes the row as
    // it now is, an archive clears it.
    let updated_at = sqlx::query_scalar!(
        "UPDATE documents SET title = COALESCE($2, title), body = COALESCE($3, body), \
         status = $4, version = $5, current_review_id = $6, fence_token = $7, \
         policy = COALESCE($8, policy), updated_at = clock_timestamp(), \
         published_version = CASE $9 WHEN 'publish' THEN $5 WHEN 'withdraw' THEN NULL \
                                     ELSE published_version END, \
         published_title = CASE $9 WHEN 'publish' THEN COALESCE($2, title) \
                                   WHEN 'withdraw' THEN NULL ELSE published_title END, \
         published_body = CASE $9 WHEN 'publish' THEN COALESCE($3, body) \
                                  WHEN 'withdraw' THEN NULL ELSE published_body END, \
         audit_count = COALESCE($10, audit_count), audit_head = COALESCE($11, audit_head), \
         contributors = COALESCE($12, contributors), \
         verify_by = CASE $13 WHEN 'keep' THEN verify_by ELSE $14 END \
         WHERE id = $1 RETURNING updated_at",
        change.id,
        title,
        body,
        change.status as DocumentStatus,
        change.version,
        change.current_review_id,
        change.fence_token as Option<FencingToken>,
        change.policy.as_deref(),
        publication,
        link.seq,
        link.hash.as_deref(),
        change.contributors.as_deref(),
        verify,
        verify_by,
    )
    .fetch_one(&mut **tx)
    .await?;
    Ok(changed(before, change, updated_at))
}

/// How a change moves `verify_by`, as the statements that write it say it: `keep`, or
/// `set` to the time (`None`: cleared).
pub(super) fn verification(
    verify: Verify,
) -> (&'static str, Option<chrono::DateTime<chrono::Utc>>) {
    match verify {
        Verify::Keep => ("keep", None),
        Verify::At(t) => ("set", Some(t)),
        Verify::Clear => ("set", None),
    }
}

/// How a change moves the published revision, as the statements that write it say it.
pub(super) fn publication(published: Publication) -> &'static str {
    match published {
        Publication::Keep => "keep",
        Publication::Publish => "publish",
        Publication::Withdraw => "withdraw",
    }
}

/// The document `before` as `change` leaves it, written at `updated_at`.
pub(super) fn changed(
    before: Document,
    change: DocumentChange,
    updated_at: chrono::DateTime<chrono::Utc>,
) -> Document {
    let title = change
        .title
        .map_or(before.title, DocumentTitle::into_string);
    let body = change.body.map_or(before.body, DocumentBody::into_string);
    let (published_version, published_title, published_body) = match change.published {
        Publication::Keep => (
            before.published_version,
            before.published_title,
            before.published_body,
        ),
        Publication::Publish => (
            Some(change.version),
            Some(title.clone()),
            Some(body.clone()),
        ),
        Publication::Withdraw => (None, None, None),
    };
    Document {
        id: change.id,
        title,
        body,
        status: change.status,
        version: change.version,
        author_id: before.author_id,
        space: before.space,
        current_review_id: change.current_review_id,
        policy: change.policy.unwrap_or(before.policy),
        contributors: change.contributors.unwrap_or(before.contributors),
        verify_by: match change.verify {
            Verify::Keep => before.verify_by,
            Verify::At(t) => Some(t),
            Verify::Clear => None,
        },
        fence_token: change.fence_token,
        created_at: before.created_at,
        updated_at,
        published_version,
        published_title,
        published_body,
    }
}

impl PgStore {
    /// Whether `reader` may see the document (`None`: no such document).
    pub async fn readable(&self, id: Uuid, reader: Reader<'_>) -> Result<Option<bool>, StoreError> {
        let row = sqlx::query!(
            r#"SELECT author_id, space_id, current_review_id IS NOT NULL AS "submitted!"
               FROM documents WHERE id = $1"#,
            id
        )
        .fetch_optional(&mut *self.scoped().await?)
        .bounded(self)
        .await?;
        Ok(row.map(|r| crate::domain::readable(&r.author_id, r.submitted, &r.space_id, reader)))
    }
}
