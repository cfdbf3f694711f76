# syntax=docker/dockerfile:1
# Multi-stage build: compile in a Rust image, run in a slim Debian image as a non-root user.
# `make image` builds it (docs/operations.md, "The image"): with the public images below
# where a registry is reachable, else with the local ones scripts/image/base.sh makes
# (a Debian 12 root; the same with Debian's rustc-web and cargo-web), passed as these
# build arguments. Targets: `runtime` (the default, the last stage: compiles the binary)
# and `runtime-prebuilt` (a binary built elsewhere, e.g. by CI: see that stage).
ARG BUILDER_IMAGE=rust:1.94-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${BUILDER_IMAGE} AS builder
WORKDIR /app
# SQL is checked against the committed query data in .sqlx/: no database at build time.
ENV SQLX_OFFLINE=true
# Dependencies in a layer of their own: built once with stubs of every target the manifests
# name (the crate's, and the test kit's, a workspace member; the workspace-hack member is
# copied whole: it holds no code); the layer is rebuilt only when a manifest or Cargo.lock
# changes. Behind a TLS-intercepting proxy, pass its CA bundle as
# the secret `cacert` (--secret id=cacert,src=/etc/ssl/certs/ca-certificates.crt; make image
# does); without it cargo uses the image's own roots.
COPY Cargo.toml Cargo.lock ./
COPY tests/kit/Cargo.toml tests/kit/
COPY tools/workspace-hack tools/workspace-hack
RUN --mount=type=secret,id=cacert \
    mkdir -p src tests/api tests/kit/src benches \
    && echo 'fn main() {}' > src/main.rs && echo 'fn main() {}' > benches/review.rs \
    && touch src/lib.rs tests/api/main.rs tests/kit/src/lib.rs \
    && if [ -s /run/secrets/cacert ]; then \
         export CARGO_HTTP_CAINFO=/run/secrets/cacert SSL_CERT_FILE=/run/secrets/cacert; fi \
    && cargo build --release --locked --bin kh-review
# The real sources: only the crate itself compiles (offline: every dependency is above).
# The stubs are newer than the copied sources, so the crate roots are touched.
COPY . .
RUN touch src/main.rs src/lib.rs \
    && cargo build --release --locked --offline --bin kh-review \
    && strip target/release/kh-review

# What both runtime targets share: ca-certificates (already in the local base, which has no
# apt), the user, config/, the settings, the health check.
FROM ${RUNTIME_IMAGE} AS runtime-base
RUN if [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends ca-certificates \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
    && useradd --uid 10001 --no-create-home --home-dir /app --shell /usr/sbin/nologin kh
WORKDIR /app
COPY config ./config
USER 10001
# production (also the built-in default) needs the issuer and audience of its tokens and
# refuses the public development JWT secret: run with -e APP__AUTH__ISSUER=<the provider's iss>
# -e APP__AUTH__AUDIENCE=<the aud it issues for this service>, and either
# -e APP__AUTH__ALGORITHMS=RS256 -e APP__AUTH__JWKS_URL=<its JWKS> (docs/operations.md) or
# -e APP__AUTH__JWT_SECRET=<an HS256 secret of your own, at least 32 bytes>; and
# -e APP__AUDIT__KEY=<a secret of your own, at least 32 bytes> (the audit chain's key).
# The database as two roles (docs/operations.md, "Two database roles"):
# -e APP__DATABASE__URL=postgres://<a login role of kh_service>:<password>@<host>:5432/<db>
# (every session of the service, which row-level security walls into its callers' spaces)
# -e APP__DATABASE__MIGRATE_URL=postgres://<the tables' owner>:<password>@<host>:5432/<db>.
ENV APP__SERVER__HOST=0.0.0.0 \
    APP__ENVIRONMENT=production \
    APP__LOG__FORMAT=json
EXPOSE 8080
# `kh-review probe` exits 0 when the local /readyz answers 200, on the server's own port
# (`server.port`: APP__SERVER__PORT or a mounted settings file, else 8080). podman keeps a
# HEALTHCHECK only in the docker image format (--format docker).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/kh-review", "probe"]
ENTRYPOINT ["/usr/local/bin/kh-review"]
CMD ["serve"]

# A binary built outside (CI's debug build): the build context is a folder holding only
# `kh-review` and `config/` (scripts/image/build.sh --prebuilt makes it), so nothing compiles.
FROM runtime-base AS runtime-prebuilt
COPY kh-review /usr/local/bin/kh-review

# The default target: the binary compiled above.
FROM runtime-base AS runtime
COPY --from=builder /app/target/release/kh-review /usr/local/bin/kh-review
