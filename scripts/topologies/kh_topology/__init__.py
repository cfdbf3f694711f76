"""The topologies whose nodes the topology tests kill (scripts/topologies/topology.py)."""
