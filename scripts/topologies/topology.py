#!/usr/bin/python3
"""scripts/topologies/topology.py — the topologies whose nodes the topology tests kill, one
program (Python 3.11 standard library):

  topology.py redis-cluster    packages|up|down|status|env
  topology.py redis-sentinel   packages|up|down|status|env
  topology.py rabbitmq-cluster packages|up|down|status|env|pid PORT
  topology.py postgres-ha      packages|up|down|status|env|leader|switchover [NAME]

Run by `scripts/services.sh up|install|down|status|env PROFILE`, or directly. What each
profile is and what its verbs do: the docstring of its module in kh_topology/
(`topology.py PROFILE help`). Unit tests: `python3 -m unittest discover -s
scripts/topologies/tests` (make lint)."""

import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kh_topology.cli import PROFILES, main  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in PROFILES and sys.argv[2] in ("help", "-h"):
        print(PROFILES[sys.argv[1]].__doc__)
        sys.exit(0)
    sys.exit(main())
