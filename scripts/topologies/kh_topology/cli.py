"""topology.py PROFILE VERB [ARG]: argument parsing and dispatch to a profile's verbs."""

import sys

from . import postgres_ha, rabbitmq, redis_cluster, redis_sentinel
from .common import STATE

PROFILES = {
    "redis-cluster": redis_cluster,
    "redis-sentinel": redis_sentinel,
    "rabbitmq-cluster": rabbitmq,
    "postgres-ha": postgres_ha,
}
# Verbs every profile has, and those of one profile with the argument they take.
COMMON = ("packages", "up", "down", "status", "env")
EXTRA = {
    "rabbitmq-cluster": {"pid": "PORT"},
    "postgres-ha": {"leader": None, "switchover": "[NAME]"},
}


class Usage(Exception):
    """Bad arguments; the message is the usage line."""


def usage(profile=None):
    if profile is None:
        return ("usage: topology.py PROFILE VERB [ARG]   (PROFILE: "
                + " | ".join(PROFILES) + "; VERB: " + "|".join(COMMON) + ", and pid PORT "
                "for rabbitmq-cluster, leader|switchover [NAME] for postgres-ha)")
    extra = [f"{v} {a}" if a else v for v, a in EXTRA.get(profile, {}).items()]
    return f"usage: topology.py {profile} " + "|".join([*COMMON, *extra])


def parse(argv):
    """(profile, verb, argument or None) from the command line; raises Usage."""
    if not argv or argv[0] not in PROFILES:
        raise Usage(usage())
    profile, rest = argv[0], argv[1:]
    verbs = {**{v: None for v in COMMON}, **EXTRA.get(profile, {})}
    if not rest or rest[0] not in verbs:
        raise Usage(usage(profile))
    verb, args = rest[0], rest[1:]
    takes = verbs[verb]
    if len(args) > (1 if takes else 0) or (takes == "PORT" and len(args) != 1):
        raise Usage(usage(profile))
    arg = args[0] if args else None
    if takes == "PORT":
        if not arg.isdigit():
            raise Usage(usage(profile))
        arg = int(arg)
    return profile, verb, arg


def run(profile, verb, arg):
    """Runs one verb; returns the exit status."""
    mod = PROFILES[profile]
    if verb == "packages":
        for p in mod.packages():
            print(p)
        return 0
    if verb == "env":
        for line in mod.env():
            print(line)
        return 0
    if verb == "up":
        STATE.mkdir(parents=True, exist_ok=True)
    fn = getattr(mod, verb)
    return fn(arg) if EXTRA.get(profile, {}).get(verb) else fn()


def main(argv=None):
    try:
        profile, verb, arg = parse(sys.argv[1:] if argv is None else argv)
    except Usage as e:
        print(e, file=sys.stderr)
        return 2
    return run(profile, verb, arg)
