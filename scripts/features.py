#!/usr/bin/env python3
"""Checks that the binary's build and the test build compile every dependency alike
(docs/development.md, "One build"), so that `make run` after `make test` (or the other way
round) reuses the first build instead of compiling much of the tree again.

Cargo resolves features per build: the dev-dependencies of a test build can turn on
features of a shared dependency (tokio's test-util, say) that a build of the binary alone
leaves off, and then that dependency and everything above it is compiled twice.
tools/workspace-hack names each such dependency with the test build's features, for both.

This compares, for every package the binary's build compiles, the feature sets cargo
resolves in the two builds (`cargo tree -e features` of each). Exit 1 on a difference, naming
the package and the features to add to tools/workspace-hack/Cargo.toml ([dependencies] for
a crate built for the target, [build-dependencies] for one built for the host: a proc macro
or a build script's dependency). No build: it reads the lock file (and, on a bare machine,
fetches the crates' manifests, which the build that follows reuses).
"""

import re
import subprocess
import sys
from collections import defaultdict

LINE = re.compile(r"(\S+) v(\S+)(?: \(.*?\))? \[(.*)\]$")


def resolved(*args):
    """Package (name, version) -> the set of feature lists cargo resolves for it (a package
    built for both the host and the target appears with one list for each)."""
    out = subprocess.run(
        ["cargo", "tree", "--locked", "--prefix", "none", "-f", "{p} [{f}]", *args],
        check=True, capture_output=True, text=True,
    ).stdout
    found = defaultdict(set)
    for line in out.splitlines():
        m = LINE.match(line.strip())
        if m:
            found[(m[1], m[2])].add(m[3])
    return found


def main():
    binary = resolved("-p", "kh-review", "-e", "normal,build")
    tests = resolved("--workspace", "-e", "normal,build,dev")
    differ = sorted(k for k in binary if binary[k] != tests.get(k))
    for name, version in differ:
        print(f"features: {name} {version} builds with {sorted(binary[(name, version)])} for "
              f"the binary but {sorted(tests.get((name, version), set()))} for the tests")
    if differ:
        print(f"features: {len(differ)} packages would be compiled twice; add them with the "
              "tests' features to tools/workspace-hack/Cargo.toml")
        return 1
    print(f"features: the binary's {len(binary)} packages build alike in the test build")
    return 0


if __name__ == "__main__":
    sys.exit(main())
