#!/usr/bin/env bash
# scripts/image/base.sh: the two base images of the Dockerfile, made locally for machines
# that reach no image registry, with mmdebstrap, and imported into podman's store: runtime,
# a Debian 12 root of the Essential packages plus ca-certificates and passwd (no apt: 57
# MB); builder, a minbase root (with apt) plus Debian's rustc-web/cargo-web and what a
# build links with. Each is tagged with a hash of its recipe (variant, packages, excludes,
# apt sources), so a second run reuses it. Uses the machine's own Debian mirror
# (/etc/apt/sources.list.d/*.sources or /etc/apt/sources.list), with its security suite.
#   scripts/image/base.sh [runtime] [builder]     (both when none is named)
# Prints the build arguments to pass, one a line: RUNTIME_IMAGE=... BUILDER_IMAGE=...
set -euo pipefail
cd "$(dirname "$0")/../.."

STATE="${KH_IMAGE_STATE:-/var/tmp/kh-review/image}"
mkdir -p "$STATE"
eval "$(scripts/image/podman.sh)"
exec 9>"$STATE/.base.lock"   # one maker at a time
flock 9
log() { echo "[image/base] $*" >&2; }

# One-line apt sources ("deb URI SUITE COMPONENTS") for bookworm, bookworm-updates and
# bookworm-security, read from the host's deb822 or one-line files.
sources() {
  local lines
  lines=$(
    {
      for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        awk 'BEGIN{RS=""; FS="\n"}
          { t=""; u=""; s=""; c="";
            for (i=1;i<=NF;i++) { split($i, kv, ": ");
              if (kv[1]=="Types") t=kv[2]; if (kv[1]=="URIs") u=kv[2];
              if (kv[1]=="Suites") s=kv[2]; if (kv[1]=="Components") c=kv[2]; }
            if (t ~ /(^| )deb( |$)/ && s ~ /bookworm/) { n=split(s, ss, " ");
              for (j=1;j<=n;j++) print "deb " u " " ss[j] " " c } }' "$f"
      done
      grep -hE '^deb +(http|file)[^ ]* +bookworm' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true
    } | awk '!seen[$0]++'
  )
  if [[ -z $lines ]]; then
    lines=$'deb http://deb.debian.org/debian bookworm main\ndeb http://deb.debian.org/debian bookworm-updates main\ndeb http://deb.debian.org/debian-security bookworm-security main'
  fi
  printf '%s\n' "$lines"
}

SOURCES=$(sources)
grep -q 'bookworm-security' <<<"$SOURCES" \
  || { log "no bookworm-security suite in the apt sources: rustc-web 1.94+ lives there"; exit 1; }

# Documentation, man pages and locales stay out of both roots (the copyright files stay).
EXCLUDES=(
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-include=/usr/share/locale/locale.alias'
  --dpkgopt='path-exclude=/usr/share/lintian/*'
)
PATH_ENV='PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

make_base() { # name variant packages [more dpkg path options]: prints the tag
  local name=$1 variant=$2 packages=$3 tag tar start
  shift 3
  local excludes=("${EXCLUDES[@]}" "$@")
  tag="localhost/kh-review-base:$name-$(
    printf '%s\n' "$variant" merged-usr "$packages" "${excludes[@]}" "$PATH_ENV" "$SOURCES" | sha256sum | cut -c1-12)"
  if podman image exists "$tag"; then
    log "$tag present"
    echo "$tag"
    return
  fi
  command -v mmdebstrap >/dev/null || { log "mmdebstrap missing (apt-get install mmdebstrap)"; exit 1; }
  tar="$STATE/${tag##*:}.tar"
  start=$SECONDS
  log "$tag: mmdebstrap $variant + $packages (log: $STATE/mmdebstrap.log)"
  mmdebstrap --variant="$variant" --format=tar --include="$packages" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr "${excludes[@]}" \
    bookworm "$tar.part" - <<<"$SOURCES" >"$STATE/mmdebstrap.log" 2>&1 \
    || { log "mmdebstrap failed: tail of $STATE/mmdebstrap.log:"; tail -20 "$STATE/mmdebstrap.log" >&2; exit 1; }
  mv "$tar.part" "$tar"
  podman import -q --change "ENV $PATH_ENV" --change 'CMD ["/bin/sh"]' "$tar" "$tag" >/dev/null
  rm -f "$tar"
  log "$tag made in $((SECONDS - start)) s"
  echo "$tag"
}

(($#)) || set -- runtime builder
for name in "$@"; do
  case $name in
    runtime)
      # The Essential packages only, no apt (and so none of its libraries, 12 MB), plus
      # ca-certificates and passwd (useradd); without glibc's character set converters
      # (9 MB): the service converts nothing.
      tag=$(make_base runtime essential ca-certificates,passwd --dpkgopt='path-exclude=/usr/lib/x86_64-linux-gnu/gconv/*')
      echo "RUNTIME_IMAGE=$tag"
      ;;
    builder)
      tag=$(make_base builder minbase ca-certificates,libssl3,rustc-web,cargo-web,gcc,libc6-dev,pkg-config,make)
      # cargo and rustc must resolve on PATH, at the version Cargo.toml asks for (1.94+).
      podman run --rm --network=none "$tag" sh -c 'cargo --version && rustc --version' >&2 \
        || { log "cargo/rustc do not run in $tag"; exit 1; }
      echo "BUILDER_IMAGE=$tag"
      ;;
    *) log "usage: scripts/image/base.sh [runtime] [builder]"; exit 2 ;;
  esac
done
