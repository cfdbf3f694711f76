#!/usr/bin/env python3
"""The dependency check of `make lint` (docs/development.md, "Dependencies").

1. Licences: every package the build can compile on Linux (the workspace's crates and all
   they pull in, dev- and build-dependencies included) must have a licence expression that
   an allow-list satisfies: `A OR B` needs one side allowed, `A AND B` both, `A WITH X` the
   licence A (the exceptions we meet only widen it). A package without a licence fails.
2. Versions: every direct dependency of the workspace must resolve, in Cargo.lock, to the
   newest semver-compatible series the registry has as a stable release (pre-releases do
   not count): a crate a major version behind fails, unless HELD names it with the reason
   (docs/decisions.md says why each one is held).

Known advisories are not checked: no advisory database can be had on these machines
(docs/decisions.md, "No advisory check").

Usage: scripts/deps.py [licences|versions|all]   (default: all). Exit 1 on a finding.
"""

import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

# SPDX identifiers we accept: permissive licences, and MPL-2.0, whose copyleft is per file
# and asks nothing of the code that links it.
ALLOWED = {
    "0BSD", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "BSL-1.0", "CC0-1.0",
    "CDLA-Permissive-2.0", "ISC", "MIT", "MIT-0", "MPL-2.0", "Unicode-3.0", "Unlicense",
    "Zlib",
}

# Direct dependencies kept a major version behind on purpose: name -> why.
HELD = {
    "reqwest": "0.13's rustls feature brings the aws-lc-rs provider (a C build); the rest of "
    "the tree uses ring, and 0.13 without a provider needs one installed by hand",
}

TARGET = "x86_64-unknown-linux-gnu"


def metadata():
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", TARGET],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def tokens(expression):
    # Old crates write "MIT/Apache-2.0" for "MIT OR Apache-2.0".
    return re.findall(r"\(|\)|[A-Za-z0-9.+-]+", expression.replace("/", " OR "))


def satisfied(expression):
    """Whether an SPDX expression is met by ALLOWED (OR binds looser than AND)."""
    toks = tokens(expression)
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def take():
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def primary():
        tok = take()
        if tok == "(":
            value = either()
            if take() != ")":
                raise ValueError(expression)
            return value
        value = tok in ALLOWED
        if peek() == "WITH":
            take()
            take()
        return value

    def chain(operator, operand, combine):
        value = operand()
        while peek() == operator:
            take()
            value = combine(operand(), value)
        return value

    def both():
        return chain("AND", primary, lambda a, b: a and b)

    def either():
        return chain("OR", both, lambda a, b: a or b)

    result = either()
    if pos != len(toks):
        raise ValueError(expression)
    return result


def check_licences(meta):
    members = set(meta["workspace_members"])
    used = {node["id"] for node in meta["resolve"]["nodes"]}
    bad = []
    for pkg in meta["packages"]:
        if pkg["id"] in members or pkg["id"] not in used:
            continue
        licence = pkg.get("license")
        try:
            ok = bool(licence) and satisfied(licence)
        except (ValueError, IndexError):
            ok = False
        if not ok:
            bad.append(f"  {pkg['name']} {pkg['version']}: {licence or 'no licence'}")
    count = len(used - members)
    if bad:
        print(f"licences: {len(bad)} of {count} packages are not allowed:")
        print("\n".join(sorted(bad)))
        return False
    print(f"licences: all {count} packages allowed")
    return True


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
    for member in meta["workspace_members"]:
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
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what not in ("licences", "versions", "all"):
        sys.exit(__doc__)
    meta = metadata()
    ok = True
    if what in ("licences", "all"):
        ok = check_licences(meta) and ok
    if what in ("versions", "all"):
        ok = check_versions(meta) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
