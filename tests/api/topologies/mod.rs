//! Topologies these tests start with `scripts/services.sh` and whose nodes they kill, one
//! at a time (`make test-topologies`): a Redis Cluster, a Redis Sentinel set-up, a RabbitMQ
//! cluster, PostgreSQL under Patroni behind HAProxy, and a rolling upgrade of three
//! instances behind HAProxy.

mod cluster;
mod postgres;
mod rabbitmq;
mod sentinel;
mod upgrade;
