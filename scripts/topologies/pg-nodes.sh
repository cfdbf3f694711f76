# shellcheck shell=bash disable=SC2154  # (the constants are postgres-ha.sh's)
# scripts/topologies/pg-nodes.sh — the processes of the postgres-ha profile, for
# postgres-ha.sh, which sources it after its constants: finding, starting and
# stopping them, and asking Patroni's REST API. Sourced, never run.

# The REST API side, in the python Patroni runs on. `rest view`: prints "LEADER
# PG_PORT SYNC TIMELINE" when etcd answers and the cluster is healthy (see
# status), else (and fails) the first problem found. `rest leader`: the
# leader's name. `rest etcd`: etcd answers healthy.
PY_REST='
import json, sys, urllib.request
op = urllib.request.build_opener(urllib.request.ProxyHandler({}))
def get(url):
    with op.open(url, timeout=2) as r:
        return json.load(r)
def bad(msg):
    print(msg); sys.exit(1)
mode, etcd, names, apis = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4:]
if mode in ("view", "etcd"):
    try: ok = get("http://127.0.0.1:%s/health" % etcd).get("health") == "true"
    except Exception: ok = False
    if not ok: bad("etcd 127.0.0.1:%s does not answer healthy" % etcd)
    if mode == "etcd": sys.exit(0)
cl = None
for p in apis:
    try: cl = get("http://127.0.0.1:%s/cluster" % p); break
    except Exception: pass
if cl is None: bad("no Patroni REST API answers on 127.0.0.1:%s" % ",".join(apis))
ms = {m["name"]: m for m in cl.get("members", [])}
ls = [n for n, m in ms.items() if m.get("role") == "leader"]
if mode == "leader":
    if len(ls) != 1: bad("no leader")
    print(ls[0]); sys.exit(0)
miss = [n for n in names if n not in ms]
if miss: bad("member(s) %s not in etcd (Patroni not running?)" % " ".join(miss))
if cl.get("pause"): bad("the cluster is paused (patronictl resume)")
if len(ls) != 1: bad("no leader" if not ls else "leaders: " + " ".join(ls))
L = ms[ls[0]]; tl = L.get("timeline")
for n in names:
    m = ms[n]
    if m.get("state") != "running": bad("%s is %s" % (n, m.get("state") or "in an unknown state"))
    if m.get("timeline") != tl: bad("%s is on timeline %s, the leader %s on %s" % (n, m.get("timeline"), L["name"], tl))
sy = [n for n in names if ms[n].get("role") == "sync_standby"]
if len(sy) != 1: bad("no sync standby yet")
try: st = get(L["api_url"])
except Exception: bad("the leader %s does not answer on %s" % (L["name"], L["api_url"]))
rep = {r.get("application_name"): r for r in st.get("replication") or []}
for n in names:
    if n != L["name"] and (rep.get(n) or {}).get("state") != "streaming":
        bad("%s is not streaming from the leader %s yet" % (n, L["name"]))
if rep[sy[0]].get("sync_state") != "sync": bad("%s is not in sync yet" % sy[0])
print(L["name"], L.get("port"), sy[0], tl)
'
rest() { /usr/bin/python3 -c "$PY_REST" "$1" "$ETCD_PORT" "${NAMES[*]}" "${API_PORTS[@]}" 2>/dev/null 9>&-; }

# haproxy_up — the members HAProxy sends connections to (UP, or UP but failing
# checks), one a line, from its stats socket
PY_HAPROXY='
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(sys.argv[1]); s.sendall(b"show stat\n")
out = b""
while True:
    b = s.recv(65536)
    if not b: break
    out += b
for f in (l.split(",") for l in out.decode().splitlines()):
    if len(f) > 17 and f[0] == "postgres" and f[1] not in ("FRONTEND", "BACKEND") and f[17].startswith("UP"): print(f[1])
'
haproxy_up() { /usr/bin/python3 -c "$PY_HAPROXY" "$DIR/haproxy.sock" 2>/dev/null 9>&-; }

# our_pid PIDFILE PATTERN — the pid of our live process: from PIDFILE, else (lost
# or stale) the oldest one whose command line has PATTERN (a path in $DIR), which
# is then written to PIDFILE. Fails if none runs.
our_pid() {
  local p
  if pid_alive "$1" "$2"; then cat "$1"; return 0; fi
  p=$(pgrep -o -f -- "$2" 2>/dev/null) || return 1
  [[ ! -d ${1%/*} ]] || echo "$p" >"$1"
  echo "$p"
}
etcd_pid() { our_pid "$DIR/etcd.pid" "etcd --name kh-review-ha --data-dir $DIR/etcd"; }
haproxy_pid() { our_pid "$DIR/haproxy.pid" "haproxy -db -f $DIR/haproxy.cfg"; }
ferretdb_pid() { our_pid "$DIR/ferretdb.pid" "ferretdb .*--listen-addr=127.0.0.1:$MONGO_PORT"; }
patroni_pid() { our_pid "$DIR/$1/patroni.pid" "patroni $DIR/$1/patroni.yml"; } # patroni_pid NAME

# pm_pid NAME — the pid of member NAME's live postmaster
pm_pid() {
  local f="$DIR/$1/data/postmaster.pid" p
  [[ -s $f ]] && p=$(head -n 1 "$f" 2>/dev/null) && [[ $p =~ ^[0-9]+$ ]] && ! pid_gone "$p" || return 1
  tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "-D $DIR/$1/data" || return 1
  echo "$p"
}
# in_datadir NAME — pids of the processes working in member NAME's data dir
# (a postmaster and its children, also those a killed postmaster left behind)
in_datadir() {
  find /proc/[0-9]*/cwd -maxdepth 0 -lname "$DIR/$1/data" 2>/dev/null | cut -d/ -f3 || true
}

# stop_pids SIGNAL PID... — send SIGNAL, wait (max 30 s), KILL the stubborn ones
stop_pids() {
  local sig=$1 left; shift
  (( $# )) || return 0
  kill -s "$sig" "$@" 2>/dev/null || true
  wait_for 30 all_gone "$@" >/dev/null && return 0
  left=$(for q in "$@"; do pid_gone "$q" || printf '%s ' "$q"; done)
  warn "postgres-ha: pid(s) ${left% } ignored $sig; sending KILL"
  # shellcheck disable=SC2086
  kill -9 $left 2>/dev/null || true
  wait_for 5 all_gone "$@" >/dev/null
}

# stop_all — FerretDB and HAProxy, the Patroni members (each stops its
# PostgreSQL), postmasters left without their Patroni (fast shutdown), whatever
# still runs in a data dir, then etcd
stop_all() {
  local n p pids=() rc=0
  for n in ferretdb haproxy; do if p=$("${n}_pid"); then pids+=("$p"); fi; done
  stop_pids TERM "${pids[@]}" || rc=1
  pids=(); for n in "${NAMES[@]}"; do if p=$(patroni_pid "$n"); then pids+=("$p"); fi; done
  stop_pids TERM "${pids[@]}" || rc=1
  pids=(); for n in "${NAMES[@]}"; do if p=$(pm_pid "$n"); then pids+=("$p"); fi; done
  stop_pids INT "${pids[@]}" || rc=1
  pids=(); for n in "${NAMES[@]}"; do mapfile -t -O "${#pids[@]}" pids < <(in_datadir "$n"); done
  stop_pids KILL "${pids[@]}" || rc=1
  if p=$(etcd_pid); then stop_pids TERM "$p" || rc=1; fi
  return "$rc"
}

# spawn WORKDIR PIDFILE LOG CMD... — CMD in its own session (so it outlives this
# script), in the background, from WORKDIR; setsid and setpriv exec in place
# (no job control here), so the pid written is CMD's own
spawn() {
  local wd=$1 pidf=$2 logf=$3; shift 3
  (cd "$wd" && exec nohup setsid "$@") </dev/null >>"$logf" 2>&1 9>&- &
  echo $! >"$pidf"
}

# ferretdb_bin — a working FerretDB of our version, looked for as
# scripts/services/ferretdb.sh does (it builds one: `ferretdb.sh install`)
ferretdb_bin() {
  local c cands=() d
  if c=$(command -v ferretdb 2>/dev/null); then cands+=("$c"); fi
  if command -v go >/dev/null 2>&1; then
    d=$(GOTOOLCHAIN=local go env GOBIN 2>/dev/null || true)
    [[ -n $d ]] || d="$(GOTOOLCHAIN=local go env GOPATH 2>/dev/null | cut -d: -f1)/bin"
    cands+=("$d/ferretdb")
  fi
  [[ -z ${GOBIN:-} ]] || cands+=("$GOBIN/ferretdb")
  cands+=("${HOME:-/root}/go/bin/ferretdb")
  for c in "${cands[@]}"; do
    if [[ -x $c ]] && "$c" --version 2>/dev/null | grep -qx "version: $FERRET_VERSION"; then echo "$c"; return 0; fi
  done
  return 1
}

# psu PORT DB PSQL_ARGS... — psql as the superuser, on the member on PORT
psu() {
  local port=$1 db=$2; shift 2
  PGPASSWORD=$SU_PASSWORD PGCONNECT_TIMEOUT=5 "$(pg_tool psql)" -X -q -v ON_ERROR_STOP=1 \
    -h 127.0.0.1 -p "$port" -U postgres -d "$db" "$@" </dev/null 9>&-
}
