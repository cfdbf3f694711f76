#!/usr/bin/env python3
"""The dependency check of `make lint` (docs/development.md, "Dependencies").

The major-version check of `make deps` (scripts/deny.sh checks licences, bans and sources
with cargo-deny first): every direct dependency of the workspace must resolve, in
Cargo.lock, to the newest semver-compatible series the registry has as a stable release
(pre-releases do not count): a crate a major version behind fails, unless HELD names it
with the reason (docs/decisions.md says why each one is held). The workspace-hack member's
entries are not counted: they only repeat, with features, what another member depends on.

Known advisories are not checked: no advisory database can be had on these machines
(docs/decisions.md, "No advisory check").

Usage: scripts/deps.py. Exit 1 on a finding.
"""

import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

# Direct dependencies kept a major version behind on purpose: name -> why.
HELD = {
    "reqwest": "0.13's rustls feature brings the aws-lc-rs provider (a C build); the rest of "
    "the tree uses ring, and 0.13 without a provider needs one installed by hand",
}

TARGET = "x86_64-unknown-linux-gnu"
WORKSPACE_HACK = "kh-review-workspace-hack"


def metadata():
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", TARGET],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def series(version):
    """The semver-compatible series of a version: (major,) from 1.0 on, (0, minor) before."""
    major, minor = (int(p) for p in version.split("-")[0].split(".")[:2])
    return (major,) if major else (0, minor)


def newest(name, spec=None):
    """The version `cargo info` reports for name (or name@spec), outside any workspace."""
    with tempfile.TemporaryDirectory() as empty:
        out = subprocess.run(
            ["cargo", "info", "--quiet", f"{name}@{spec}" if spec else name],
            cwd=empty, capture_output=True, text=True,
        )
    found = re.search(r"^version: (\S+)", out.stdout, re.M)
    return found.group(1) if found else None


def newest_stable_series(name, floor):
    """The newest series above `floor` with a stable release, or None if floor is newest."""
    latest = newest(name)
    if latest is None:
        raise RuntimeError(f"the registry does not answer for {name}")
    top = series(latest)
    if "-" not in latest:
        return top if top > floor else None
    # The newest release is a pre-release: walk the series down towards ours.
    candidates = (
        [(m,) for m in range(top[0], 0, -1)] + [(0, m) for m in range(99, -1, -1)]
        if len(top) == 1 else [(0, m) for m in range(top[1], -1, -1)]
    )
    for candidate in candidates:
        if candidate <= floor:
            return None
        found = newest(name, ".".join(map(str, candidate)))
        if found and "-" not in found and series(found) == candidate:
            return candidate
    return None


def check_versions(meta):
    by_id = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    direct = {}
    members = [m for m in meta["workspace_members"] if by_id[m]["name"] != WORKSPACE_HACK]
    for member in members:
        for dep in nodes[member]["deps"]:
            pkg = by_id[dep["pkg"]]
            if pkg["source"] and pkg["source"].startswith("registry+"):
                direct[pkg["name"]] = pkg["version"]
    with ThreadPoolExecutor(8) as pool:
        found = dict(zip(direct, pool.map(
            lambda item: newest_stable_series(item[0], series(item[1])), direct.items())))
    behind = []
    for name, version in sorted(direct.items()):
        newer = found[name]
        if newer is None:
            continue
        line = f"  {name} {version}: {'.'.join(map(str, newer))}.x is out"
        if name in HELD:
            print(f"{line} (held: {HELD[name]})")
        else:
            behind.append(line)
    if behind:
        print(f"versions: {len(behind)} of {len(direct)} direct dependencies are a major "
              "version behind (upgrade, or hold in scripts/deps.py and docs/decisions.md):")
        print("\n".join(behind))
        return False
    held = sum(1 for name in direct if found[name] is not None)
    print(f"versions: {len(direct) - held} of {len(direct)} direct dependencies are on their "
          f"newest major version, {held} held")
    return True


def main():
    if len(sys.argv) > 1:
        sys.exit(__doc__)
    sys.exit(0 if check_versions(metadata()) else 1)


if __name__ == "__main__":
    main()
