//! The second wall: which spaces' rows a transaction may see and change. PostgreSQL's
//! row-level security admits a row of a space only when the transaction declared that space
//! (migration `20261213000003`); this module makes the declaration, in the same round trip
//! as the transaction's `BEGIN`, from the scope of the task that runs it:
//!
//! - a request's task holds the spaces where its caller has a role ([`serve`], then
//!   [`grant`] once the caller is known; `*` for the platform admin), and a request
//!   whose caller is not known yet, or that forgot to say, declares none and sees nothing;
//!   a request whose checks before its transaction its token alone passes (a vote) may
//!   instead have each transaction read the caller's memberships in that round trip and
//!   declare the spaces they give ([`defer`]);
//! - a store made for background work ([`PgStore::background`]) declares `kh.background`,
//!   which nothing on a request's path sets.
//!
//! A statement outside a transaction runs in one all the same ([`PgStore::scoped`]): a
//! setting made with `set_config(..., true)` lasts one transaction, so it stays right behind
//! a transaction pooler.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;

use sqlx::{AssertSqlSafe, PgPool, Postgres, Transaction};

use super::error::StoreError;
use super::pg::{PgStore, Statement};
use super::spaces::memberships::reading_begin;
use crate::domain::{Access, TokenRoles, UserId};

tokio::task_local! {
    /// The statement the current request's transactions open with (None: none declared).
    static SPACES: RefCell<Option<Arc<str>>>;
}

/// The spaces `access` may touch, as `kh.spaces` takes them: `*` for the platform admin,
/// else the keys where it holds a role, comma-separated.
pub fn spaces_of(access: &Access) -> String {
    if access.is_platform_admin() {
        return "*".to_string();
    }
    let keys: Vec<&str> = access.memberships().map(|(space, _)| space).collect();
    keys.join(",")
}

/// Runs a request's `fut` with a scope that declares no space until [`grant`] or [`defer`]
/// says which.
pub async fn serve<F: Future>(fut: F) -> F::Output {
    SPACES.scope(RefCell::new(None), fut).await
}

/// Declares, for the rest of the current request's task, the spaces `access` may touch.
/// Outside a request's task (no [`serve`]) it does nothing. Space keys are `[a-z0-9-]`
/// (the `spaces_key_shape` check, `SpaceKey`), so the literal needs no escaping; a quote
/// is doubled all the same.
pub fn grant(access: &Access) {
    let begin = format!(
        "BEGIN; SELECT set_config('kh.spaces', '{}', true)",
        spaces_of(access).replace('\'', "''")
    );
    declare(begin.into());
}

/// Declares, for the rest of the current request's task, that each of its transactions
/// reads the memberships of the caller `id` in `groups` (its token carrying `token`) as it
/// begins, and declares the spaces they give (`spaces::memberships::reading_begin`).
/// False, declaring nothing, when they cannot be read that way: the caller's memberships
/// are then read first and [`grant`] says what they give.
pub fn defer(id: &UserId, groups: &[String], token: TokenRoles) -> bool {
    match reading_begin(id, groups, token) {
        Some(begin) => declare(begin.into()),
        None => false,
    }
}

fn declare(begin: Arc<str>) -> bool {
    SPACES
        .try_with(|cell| *cell.borrow_mut() = Some(begin))
        .is_ok()
}

/// `fut` (work a request moves to another task) with the scope of the task that calls
/// this, read now.
pub fn carry<F: Future>(fut: F) -> impl Future<Output = F::Output> {
    SPACES.scope(RefCell::new(declared()), fut)
}

/// The current task's opening statement (None: no space declared).
fn declared() -> Option<Arc<str>> {
    SPACES.try_with(|cell| cell.borrow().clone()).ok().flatten()
}

/// The statement that opens a transaction in `background` or in the current task's
/// scope.
pub(super) fn begin_statement(background: bool) -> String {
    if background {
        return "BEGIN; SELECT set_config('kh.background', 'on', true)".to_string();
    }
    match declared() {
        Some(begin) => begin.to_string(),
        None => "BEGIN".to_string(),
    }
}

impl PgStore {
    /// Opens a transaction in this store's scope (see the module's doc), under the store's
    /// client-side bound: `BEGIN` and the scope's `set_config` go in one round trip.
    pub(super) async fn scoped(&self) -> Result<Transaction<'static, Postgres>, StoreError> {
        self.scoped_in(&self.pool).await
    }

    /// [`PgStore::scoped`] on the access pool (the reads every request may make before it
    /// takes one of the transactions' connections).
    pub(super) async fn scoped_access(&self) -> Result<Transaction<'static, Postgres>, StoreError> {
        self.scoped_in(&self.access_pool).await
    }

    /// [`PgStore::scoped`] for a statement that wants the first rows of a partial index in
    /// its order (a batch taken from a backlog): bitmap scans are off for the transaction, so
    /// that the planner walks the index and stops at the batch's size. With statistics that
    /// lag a fast-growing backlog it would otherwise estimate a handful of rows, read every
    /// one of them by bitmap and sort them: each take then costs the whole backlog. Its
    /// statements are planned afresh (a custom plan), so that a plan the same statement got
    /// elsewhere with bitmap scans on, cached on the connection, is not used.
    pub(super) async fn scoped_in_order(
        &self,
    ) -> Result<Transaction<'static, Postgres>, StoreError> {
        self.scoped_setting(
            "set_config('enable_bitmapscan', 'off', true), \
             set_config('plan_cache_mode', 'force_custom_plan', true)",
        )
        .await
    }

    /// [`PgStore::scoped`] for statements that touch rows by key whatever their values
    /// (`id = ANY($1)`, a batch of rows): their generic plan is used. PostgreSQL would plan
    /// such a statement afresh at every call, as a custom plan for a short array always
    /// looks cheaper than the generic one: the outbox's done marks spent 115 µs a batch
    /// planning an index scan of the primary key, their generic plan.
    pub(super) async fn scoped_generic(
        &self,
    ) -> Result<Transaction<'static, Postgres>, StoreError> {
        self.scoped_setting("set_config('plan_cache_mode', 'force_generic_plan', true)")
            .await
    }

    /// [`PgStore::scoped`], the transaction's own `settings` (`set_config` calls) made in
    /// its `BEGIN` round trip too.
    async fn scoped_setting(
        &self,
        settings: &str,
    ) -> Result<Transaction<'static, Postgres>, StoreError> {
        let begin = format!("{}; SELECT {settings}", begin_statement(self.background));
        self.begin_on(&self.pool, begin).await
    }

    async fn scoped_in(&self, pool: &PgPool) -> Result<Transaction<'static, Postgres>, StoreError> {
        self.begin_on(pool, begin_statement(self.background)).await
    }

    async fn begin_on(
        &self,
        pool: &PgPool,
        begin: String,
    ) -> Result<Transaction<'static, Postgres>, StoreError> {
        let bound = self.tx_timeout();
        match tokio::time::timeout(bound, pool.begin_with(AssertSqlSafe(begin))).await {
            Ok(tx) => Ok(tx?),
            Err(_) => Err(StoreError::TimedOut(bound)),
        }
    }

    /// Commits `tx` under the store's client-side bound.
    pub(super) async fn commit(
        &self,
        tx: Transaction<'static, Postgres>,
    ) -> Result<(), StoreError> {
        let bound = self.tx_timeout();
        match tokio::time::timeout(bound, tx.commit()).await {
            Ok(done) => Ok(done?),
            Err(_) => Err(StoreError::TimedOut(bound)),
        }
    }

    /// Says at start whether the wall holds for the service's sessions: not when their role
    /// is a superuser, bypasses row-level security, or owns the tables (a single URL).
    pub async fn say_whether_walled(&self) {
        let open = sqlx::query_scalar!(
            r#"SELECT (r.rolsuper OR r.rolbypassrls
                       OR EXISTS (SELECT 1 FROM pg_tables t
                                  WHERE t.tablename = 'documents' AND t.tableowner = current_user))
                      AS "open!"
               FROM pg_roles r WHERE r.rolname = current_user"#
        )
        .fetch_one(&self.pool)
        .bounded(self)
        .await;
        match open {
            Ok(false) => tracing::info!("row-level security holds for database.url's role"),
            Ok(true) => tracing::warn!(
                "database.url's role owns the tables or bypasses row-level security: the \
                 spaces' second wall does not hold (set database.migrate_url to the owner and \
                 database.url to a role of kh_service: docs/operations.md)"
            ),
            Err(e) => tracing::warn!(error = %e, "could not tell whether row-level security holds"),
        }
    }

    /// This store, for background work (the dispatcher, the sweeper, replays, audit
    /// scans, the purge): its transactions see every space's rows. Never on a request's
    /// path.
    pub fn background(&self) -> Self {
        let mut store = self.clone();
        store.background = true;
        store
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{SpaceRole, SpaceRoles, TokenRoles};

    #[tokio::test]
    async fn a_request_declares_the_spaces_of_its_caller_and_nothing_before() {
        let access = Access::new(
            TokenRoles::default(),
            [
                ("hr".to_string(), SpaceRoles::NONE.with(SpaceRole::Author)),
                (
                    "eng".to_string(),
                    SpaceRoles::NONE.with(SpaceRole::Reviewer),
                ),
            ],
        );
        let statements = serve(async {
            let before = begin_statement(false);
            grant(&access);
            let carried = carry(async { begin_statement(false) });
            let after = tokio::spawn(carried).await.unwrap();
            (before, after)
        })
        .await;
        assert_eq!(statements.0, "BEGIN");
        assert_eq!(
            statements.1,
            "BEGIN; SELECT set_config('kh.spaces', 'eng,hr', true)"
        );
        // Outside a request nothing is declared, and grant has nowhere to write.
        grant(&access);
        assert_eq!(begin_statement(false), "BEGIN");
        assert!(begin_statement(true).contains("'kh.background', 'on'"));
    }

    #[tokio::test]
    async fn a_vote_may_leave_its_memberships_to_each_transaction() {
        let id = UserId::parse("rex").unwrap();
        let token = TokenRoles {
            reviewer: true,
            ..Default::default()
        };
        let (deferred, carried, refused) = serve(async {
            let deferred = defer(&id, &[], token);
            let carried = tokio::spawn(carry(async { begin_statement(false) }));
            let refused = defer(&id, &["a\0b".to_string()], token);
            (deferred, carried.await.unwrap(), refused)
        })
        .await;
        assert!(deferred && !refused);
        assert!(carried.starts_with("BEGIN; SELECT kh_read_memberships("));
        assert!(carried.contains("ARRAY[E'user:rex']"), "{carried}");
        // Outside a request there is nowhere to declare it.
        assert!(!defer(&id, &[], token));
    }

    #[test]
    fn the_platform_admin_declares_every_space() {
        assert_eq!(spaces_of(&Access::platform_admin()), "*");
    }
}
