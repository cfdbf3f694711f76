-- Room on each outbox page for the row's next version. A claim, a projection mark or a
-- set-aside changes no indexed column (nor any index predicate), so with free space on the
-- page PostgreSQL writes it as a HOT update: no new entry in each of the table's five
-- indexes. Applies to pages written from now on.
ALTER TABLE outbox SET (fillfactor = 70);
