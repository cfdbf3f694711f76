//! Volume: a large backlog and a database of realistic size. Run on their own, one at a
//! time, after the parallel run, so that their load does not skew the others' timing
//! (`make test-volume`, part of `make test`).

mod backlog;
mod plans;
mod retention;
mod webhook_retention;
