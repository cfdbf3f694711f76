//! Redis topologies (a Redis Cluster, a Sentinel set-up) that these tests start with
//! `scripts/services.sh` and whose nodes they kill; one at a time (`make test-topologies`).

mod cluster;
mod sentinel;
