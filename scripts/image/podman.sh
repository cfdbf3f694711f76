#!/usr/bin/env bash
# scripts/image/podman.sh: what podman needs on this machine to start a container, and only
# that: prints the environment to use (`eval "$(scripts/image/podman.sh)"`). Nothing of the
# host's configuration changes; what it writes stays under the state dir.
#  - a root without CAP_SYS_RESOURCE cannot raise its hard open-files limit, and crun fails
#    on podman's default (setrlimit RLIMIT_NOFILE: Operation not permitted): the generated
#    containers.conf sets default_ulimits to the hard limits crun runs under: the host's
#    open files; processes capped at 32768, the hard limit podman 4.3 gives its own
#    process (and so conmon and crun: more fails the same way);
#  - a cgroup v1 host with a cgroup2 mount at /sys/fs/cgroup/unified ("hybrid") is refused
#    by crun (cgroups in hybrid mode not supported): the runtime becomes a wrapper running
#    crun in a private mount namespace where that mount is gone (plain cgroup v1).
# A host with cgroup v2 and the capability needs neither, and gets an empty output.
set -euo pipefail

STATE="${KH_IMAGE_STATE:-/var/tmp/kh-review/image}"
command -v podman >/dev/null || { echo "[image/podman] podman missing (apt-get install podman)" >&2; exit 1; }

conf=()
if ! (ulimit -Hn 1048576) 2>/dev/null; then
  nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)
  [[ $nproc == unlimited || $nproc -gt 32768 ]] && nproc=32768
  conf+=("[containers]" "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]")
fi
if [[ $(stat -fc %T /sys/fs/cgroup) == tmpfs ]] && mountpoint -q /sys/fs/cgroup/unified 2>/dev/null; then
  runtime=$(command -v crun) || { echo "[image/podman] crun missing (apt-get install crun)" >&2; exit 1; }
  mkdir -p "$STATE"
  cat >"$STATE/crun-hybrid.part" <<EOF
#!/bin/sh
# crun in a private mount namespace without the cgroup2 mount of a hybrid host (made by
# scripts/image/podman.sh).
exec unshare --mount --propagation private /bin/sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec "\$0" "\$@"' $runtime "\$@"
EOF
  chmod +x "$STATE/crun-hybrid.part"
  mv "$STATE/crun-hybrid.part" "$STATE/crun-hybrid"
  conf+=("[engine]" "runtime = \"crun-hybrid\"" "[engine.runtimes]" "crun-hybrid = [\"$STATE/crun-hybrid\"]")
fi
# Without systemd there is no journal for podman's events.
if [[ ! -d /run/systemd/system ]]; then
  conf+=("[engine]" "events_logger = \"file\"")
fi

if ((${#conf[@]})); then
  mkdir -p "$STATE"
  # TOML allows a table once: merge the [engine] lines under one header.
  printf '%s\n' "${conf[@]}" | awk '
    /^\[/ { t=$0; if (!(t in seen)) { seen[t]=1; order[++n]=t } next }
    { body[t]=body[t] $0 "\n" }
    END { for (i=1;i<=n;i++) printf "%s\n%s", order[i], body[order[i]] }' >"$STATE/containers.conf.part"
  mv "$STATE/containers.conf.part" "$STATE/containers.conf"
  echo "export CONTAINERS_CONF=$STATE/containers.conf"
fi
