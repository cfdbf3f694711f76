# syntax=docker/dockerfile:1
# Multi-stage build: compile in the Rust image, run in a slim Debian image as a non-root user.

FROM rust:1.94-bookworm AS builder
WORKDIR /app
# SQL is checked against the committed query data in .sqlx/: no database at build time.
ENV SQLX_OFFLINE=true
# Cache dependencies: build once with stubs of every target the manifests name (the crate's,
# and the test kit's, a workspace member), then with the real sources.
COPY Cargo.toml Cargo.lock ./
COPY tests/kit/Cargo.toml tests/kit/
RUN mkdir -p src tests/api tests/kit/src benches \
    && echo 'fn main() {}' > src/main.rs && echo 'fn main() {}' > benches/review.rs \
    && touch src/lib.rs tests/api/main.rs tests/kit/src/lib.rs \
    && cargo build --release --bin kh-review || true
COPY . .
RUN touch src/main.rs src/lib.rs && cargo build --release --bin kh-review

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin kh
WORKDIR /app
COPY --from=builder /app/target/release/kh-review /usr/local/bin/kh-review
COPY config ./config
USER 10001
# production (also the built-in default) needs the issuer and audience of its tokens and
# refuses the public development JWT secret: run with -e APP__AUTH__ISSUER=<the provider's iss>
# -e APP__AUTH__AUDIENCE=<the aud it issues for this service>, and either
# -e APP__AUTH__ALGORITHMS=RS256 -e APP__AUTH__JWKS_URL=<its JWKS> (docs/operations.md) or
# -e APP__AUTH__JWT_SECRET=<an HS256 secret of your own, at least 32 bytes>.
ENV APP__SERVER__HOST=0.0.0.0 \
    APP__ENVIRONMENT=production \
    APP__LOG__FORMAT=json
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/kh-review"]
CMD ["serve"]
