-- kh_read_memberships (migration 20261219000002) kept its statement for the session, but
-- PostgreSQL planned it afresh at every call all the same: a custom plan for a short
-- `subject = ANY (subjects)` always looks cheaper than the generic one, so the generic
-- one was never chosen (pg_stat_statements over a cost run: 1,937 plans for 1,920 calls,
-- 0.105 ms of planning each, more than the statement's own execution). The function now
-- runs with the generic plan, an index scan of space_members_by_subject, made once per
-- session. The SET clause restores plan_cache_mode alone at the function's exit: the
-- transaction-local kh.memberships and kh.spaces it sets stay. Expand only: the previous
-- release calls the function unchanged.
SET LOCAL lock_timeout = '5s';

ALTER FUNCTION kh_read_memberships(text[], text, text[])
    SET plan_cache_mode = force_generic_plan;
