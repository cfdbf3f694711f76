#!/usr/bin/env bash
# The RUSTC_WORKSPACE_WRAPPER of CI's one build (.ci/run; docs/development.md, "One build"):
# cargo runs it, with the path of rustc first, for each of the workspace's own crates only
# (never for a dependency). clippy-driver in that position is a rustc that also runs
# clippy's lints (how `cargo clippy` itself drives it); `-D warnings` is an ordinary rustc
# flag that turns rustc's and clippy's warnings into errors, as `cargo clippy -- -D warnings`
# does. So the build the tests run is linted as it compiles, with no check-only build beside it.
# bash, not sh: Debian's sh (dash) drops environment variables whose names are not shell
# identifiers, and cargo passes CARGO_BIN_EXE_kh-review that way (`env!` in the tests).
exec clippy-driver "$@" -D warnings
