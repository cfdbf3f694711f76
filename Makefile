# kh-review. `make run` and `make test` install and start every backing service first
# (scripts/services.sh: PostgreSQL, Redis, RabbitMQ, FerretDB), so a fresh machine needs
# nothing else. Builds go to a target folder outside the clone so fresh clones reuse them.

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= /var/tmp/kh-review-target
WITH_ENV := eval "$$(scripts/services.sh env)" &&
# The built-in environment is production, which refuses the public development JWT secret
# of config/default.toml: local runs say development (an APP__ENVIRONMENT already set wins).
DEV_ENV := APP__ENVIRONMENT=$${APP__ENVIRONMENT:-development}
# The service as production runs it: its sessions as kh_app, which owns nothing and lacks
# BYPASSRLS (row-level security holds), its migrations as kh, the tables' owner.
TWO_ROLES := APP__DATABASE__MIGRATE_URL=$${APP__DATABASE__MIGRATE_URL:-$$APP__DATABASE__URL} \
	APP__DATABASE__URL=$$KH_SERVICE_DATABASE_URL
TEST_THREADS ?= 8

.PHONY: help services services-down services-status jaeger run test test-parallel test-volume test-topologies test-upgrade test-ui fuzz lint deps fmt migrate build token bench bench-smoke bench-peer sqlx-prepare image test-image compose-config

help:
	@echo "make run | test | test-parallel | test-volume | test-topologies | test-upgrade [FROM=rev] | test-ui | fuzz | bench | bench-smoke | bench-peer | lint | deps | fmt | sqlx-prepare | services | services-down | jaeger | migrate | build | token SUB=.. ROLES=.. | image | test-image | compose-config"

services:
	scripts/services.sh up

services-down:
	scripts/services.sh down

services-status:
	scripts/services.sh status

# A trace UI for a local run, on request (no test needs it: the trace tests start OTLP
# receivers of their own): builds Jaeger v2 from its Go module once (minutes), starts it on
# 127.0.0.1 (UI on 16686, OTLP/HTTP on 4318); `make services-down` stops it.
jaeger:
	scripts/services/jaeger.sh up
	@echo "Jaeger UI: http://127.0.0.1:16686 -- export to it with: $$(scripts/services/jaeger.sh env | sed 's/^export //') make run"

build:
	cargo build --workspace --all-targets

run: services
	$(WITH_ENV) $(DEV_ENV) $(TWO_ROLES) cargo run --bin kh-review -- serve

migrate: services
	$(WITH_ENV) $(DEV_ENV) cargo run --bin kh-review -- migrate

# Every test, in two lanes side by side (scripts/test.sh): the topology tests (a Redis
# Cluster and a Sentinel set-up, a RabbitMQ cluster, PostgreSQL under Patroni behind
# HAProxy, a rolling upgrade: servers of their own, which they start with scripts/topologies/
# and whose nodes they kill) in one; in the other the unit tests (lib) and the integration
# suite in parallel, then the volume tests (a 20,000-row backlog, a 100,000-document
# database) one at a time, then the page tests in a headless Chromium (test-ui). Examples
# and the binary hold no tests. The Python consumer test's virtualenv (the CloudEvents SDK,
# pika) comes from scripts/events_venv.sh.
# Each run is a folder of tests/api/ (a module of the one test binary `api`), selected by
# its module path, so a test joins the run of the folder it is in, whatever its name: the
# parallel run is everything else (routes::, faults::, meta::).
VOLUME_TESTS := volume::
TOPOLOGY_TESTS := topologies::
UI_TESTS := pages::
test: services
	scripts/test.sh

# The unit tests and the parallel run of tests/api/ (everything but the volume, topology
# and page tests), which `make test` runs in its second lane.
test-parallel: services
	$(WITH_ENV) cargo test --lib --test api -- --test-threads=$(TEST_THREADS) $(addprefix --skip ,$(VOLUME_TESTS) $(TOPOLOGY_TESTS) $(UI_TESTS))

# The volume tests alone (tests/api/volume/), one at a time.
test-volume: services
	$(WITH_ENV) cargo test --test api -- --test-threads=1 $(VOLUME_TESTS)

# The topology tests alone (tests/api/topologies/); they print how long each failover
# took.
# Their databases carry a tag of their own (KH_TEST_TAG + topo): the test kit drops and makes
# its template once per process, and two processes of one tag (make test runs this lane
# beside the parallel one) would drop each other's.
test-topologies: services
	$(WITH_ENV) KH_TEST_TAG=$${KH_TEST_TAG:-}topo cargo test --test api -- --test-threads=1 --nocapture $(TOPOLOGY_TESTS)

# The rolling upgrade alone (tests/api/topologies/upgrade.rs; test-topologies runs it too):
# three instances behind HAProxy under a minute of load, each replaced in turn; it prints
# the answers, HAProxy's retries, p50/p99 steady and during the upgrade, and the events.
# FROM=<git rev>: the first generation is that revision's binary with its own config/ (a
# worktree built once into its own target folder by scripts/upgrade_from.sh), for a real
# old-to-new upgrade.
test-upgrade: services
	$(WITH_ENV) $(if $(FROM),KH_UPGRADE_FROM=$$(scripts/upgrade_from.sh $(FROM))) cargo test --test api -- --nocapture topologies::upgrade

# The page tests (tests/api/pages/) in headless Chromium over chromedriver; scripts/browser.sh
# installs Debian's chromium and chromium-driver when missing. Screenshots: target/ui/*.png
test-ui: services
	scripts/browser.sh
	$(WITH_ENV) cargo test --test api -- --test-threads=2 $(UI_TESTS)

# Schema-driven fuzzing: schemathesis (pinned, in a virtualenv under /var/tmp/kh-review-tools)
# against the running service's /openapi.json, as author, reviewer and admin, with every
# check (--checks all; the exclusions a schema cannot express are in scripts/fuzz_hooks.py).
# FUZZ_EXAMPLES=N (default 30) cases per operation and phase; 2.5 to 3.5 minutes warm.
# docs/development.md: "Fuzzing".
fuzz: services
	scripts/fuzz.sh

# Benchmarks (release build; not part of `make test`). Report: target/bench/report.md and .json
bench: services
	cargo build --release --bin kh-review
	$(WITH_ENV) cargo bench --bench review

# The benchmarks' smoke run, no measurement: every group of rows `make bench` runs, at tiny
# sizes, one round, on the debug build (`cargo test` builds the benchmark and the service's
# binary in the test profile: no release build). Fails unless every group produces its
# figures (each a number); then one round of `make bench-peer`. About 45 s warm. Its report
# goes to target/bench/smoke/, marked as a smoke run. docs/development.md: "Benchmarks".
bench-smoke: services
	$(WITH_ENV) KH_BENCH_SMOKE=1 cargo test --bench review
	KH_BENCH_SMOKE=1 scripts/bench_peer.sh

# kh-review side by side with a plain Python build of its seed design (benches/peer/), on the
# same stores, under the same wrk load of approvals, at 16 and 64 connections in alternating
# rounds: each side's throughput, latency and CPU per approval by process, and the ratio
# (goal: at least 1.5x). Not part of `make bench`. Installs wrk and the peer's virtualenv
# once. About 3 minutes warm. docs/development.md: "Benchmarks".
bench-peer: services
	scripts/bench_peer.sh

# Formatting, the unit tests of the topology drivers (scripts/topologies/topology.py, about
# 2 s), then clippy over every target, built with the queries checked against a schema
# database made from migrations/: fails on a lint, or when .sqlx/ (the offline query data
# builds use) no longer matches the queries and migrations (scripts/sqlx.sh). The AsyncAPI
# document (docs/asyncapi.json, the one the service serves) is validated offline with the
# AsyncAPI parser (scripts/asyncapi.sh; a test keeps the file equal to the served one). Every
# migration is linted with squawk for what a rolling upgrade cannot take (scripts/squawk.sh).
# scripts/features.py fails when the binary's build and the test build would compile a
# dependency with different features (tools/workspace-hack: one build for `make test` and
# `make run`).
# LINT_BUILD is
# the build it checks: CI builds every target for the tests through clippy-driver instead,
# so that lints and tests share one build (.ci/run).
LINT_BUILD ?= cargo clippy --workspace --all-targets -- -D warnings
lint:
	scripts/services.sh up postgres
	cargo fmt --all -- --check
	/usr/bin/python3 -B -m unittest discover -s scripts/topologies/tests
	scripts/features.py
	scripts/asyncapi.sh docs/asyncapi.json
	scripts/squawk.sh
	scripts/sqlx.sh check $(LINT_BUILD)
	$(MAKE) --no-print-directory deps

# The dependency tree with cargo-deny (deny.toml: licences against an allow-list, no
# wildcard requirements, crates from the default registry only; scripts/deny.sh builds
# cargo-deny once per machine), then the direct dependencies a major version behind the
# registry's newest stable release, unless held with the reason (scripts/deps.py); make lint
# runs it after its build, so that on a bare machine cargo-deny's own build (scripts/tools.sh,
# in CI's background) does not hold up the compile. docs/development.md, "Dependencies".
deps:
	scripts/deny.sh
	scripts/deps.py

# After changing a query or a migration: refresh .sqlx/ (then commit it).
sqlx-prepare: services
	scripts/sqlx.sh prepare

fmt:
	cargo fmt --all

# Prints a development JWT: make token SUB=alice ROLES=author
token:
	@$(DEV_ENV) cargo run -q --bin kh-review -- token $(or $(SUB),alice) --roles $(or $(ROLES),author)

# The container image (docs/operations.md, "The image"): the Dockerfile's default target
# (release build, non-root, health check `kh-review probe`), tagged kh-review:latest; with
# docker when its daemon answers, else podman (from Debian). Where no image registry is
# reachable (this project's machines) the base images are made first, once, with mmdebstrap
# from Debian's packages (scripts/image/base.sh). Cold about 35 minutes on 2 shared cores
# (25 of them the dependencies, a layer of their own); after a change under src/ 7 to 10.
image:
	scripts/image/build.sh

# The image of the debug binary already built (no second compile: target runtime-prebuilt),
# run with podman against the local services, read-only, settings from APP__ variables:
# the README's flow through it (create, submit, approve 200, again 409, both events off a
# queue), not root, read-only root, healthy, SIGTERM exits 0, JSON logs (scripts/image/test.sh).
test-image: services
	scripts/image/test.sh

# Validates docker-compose.yml. (Debian's podman-compose 1.0.3 cannot: it has no `config`
# command, and its --dry-run creates volumes and networks and silently drops `configs:`.)
compose-config:
	scripts/image/compose_config.sh
