#!/usr/bin/env bash
# Make podman usable for Harbor on a machine without a Docker daemon (see ../shared/DESIGN.md,
# "Real containers on a machine without a Docker daemon"). Idempotent: a second run only checks and
# takes a few seconds. Prints what it did ("did:") and what it found ("ok:").
#
#   bash scripts/containers.sh              # packages, containers.conf, podman-compose, base image
#   bash scripts/containers.sh --app-base   # ... plus localhost/selfbench-app-base:trixie
#   bash scripts/containers.sh --app-image  # ... plus the app image itself (implies --app-base)
#   bash scripts/containers.sh --agents     # ... plus the agent CLIs (sandbox/agents) unpacked for trials
#
# Environment: VENV (default ./.venv), BASE_IMAGE, APP_BASE_IMAGE, APP_IMAGE, DEBIAN_MIRROR, AGENTS_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
# Absolute, so the podman-compose link made below works from any directory.
if [ -d "$VENV" ]; then VENV="$(cd "$VENV" && pwd)"; fi
BASE_IMAGE="${BASE_IMAGE:-localhost/selfbench-base:bookworm}"
APP_BASE_IMAGE="${APP_BASE_IMAGE:-localhost/selfbench-app-base:trixie}"
APP_IMAGE="${APP_IMAGE:-localhost/selfbench:latest}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Podman itself reads $CONTAINERS_CONF too, so overriding it points both at the same file.
CONTAINERS_CONF="${CONTAINERS_CONF:-/etc/containers/containers.conf}"

# What goes into the images. Changing a list changes the recipe label, which triggers a rebuild.
BASE_SUITE=bookworm
BASE_PACKAGES=python3,python3-pytest,git,ca-certificates,tmux,patch
APP_BASE_SUITE=trixie
APP_BASE_PACKAGES=python3,python3-venv,python3-pip,git,ca-certificates
RECIPE_LABEL=org.selfbench.recipe
# Extra CAs this host trusts (e.g. an egress proxy's). They go into the images, or pip/npm/git over
# TLS inside containers would fail where the host works; a change of them also triggers a rebuild.
EXTRA_CA_DIR="${EXTRA_CA_DIR:-/usr/local/share/ca-certificates}"

WANT_APP_BASE=0
WANT_APP_IMAGE=0
WANT_AGENTS=0
# Where the agents tree is unpacked; selfbench/harbor_adapter.py reads $AGENTS_DIR/current (SANDBOX_AGENTS_DIR).
AGENTS_DIR="${AGENTS_DIR:-/var/lib/selfbench/agents}"
AGENTS_IMAGE_REPO="${AGENTS_IMAGE_REPO:-localhost/selfbench-agents}"
for arg in "$@"; do
  case "$arg" in
    --agents) WANT_AGENTS=1 ;;
    --app-base) WANT_APP_BASE=1 ;;
    --app-image) WANT_APP_BASE=1; WANT_APP_IMAGE=1 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "containers.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

START=$(date +%s)
say() { printf 'containers: %s\n' "$*"; }
die() { printf 'containers: ERROR: %s\n' "$*" >&2; exit 1; }

SUDO=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "not root and no sudo: run this script as root (it installs Debian packages and writes $CONTAINERS_CONF)"
  SUDO=(sudo)
fi

# --- 1. Debian packages -------------------------------------------------------------------------
missing=()
for pkg in podman runc debootstrap uidmap; do
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    :
  else
    missing+=("$pkg")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || die "packages missing (${missing[*]}) and apt-get is not available: install them by hand"
  say "did: apt-get install ${missing[*]}"
  "${SUDO[@]}" apt-get update -qq || die "apt-get update failed (is the Debian mirror reachable?)"
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
else
  say "ok: podman $(podman --version | awk '{print $3}'), runc, debootstrap, uidmap installed"
fi

# --- 2. containers.conf -------------------------------------------------------------------------
# crun fails on these hosts (hybrid cgroup v1, raising rlimits is not permitted), hence runc and no
# default ulimits. Merge line-wise so an operator's other settings and comments survive.
PY=python3
[ -x "$VENV/bin/python" ] && PY="$VENV/bin/python"
command -v "$PY" >/dev/null || die "python3 is needed to edit $CONTAINERS_CONF"
conf_result=$("${SUDO[@]}" "$PY" - "$CONTAINERS_CONF" <<'PYEOF'
import re
import sys
from pathlib import Path

path = Path(sys.argv[1])
wanted = {"containers": ("default_ulimits", "[]"), "engine": ("runtime", '"runc"')}
lines = path.read_text().splitlines() if path.exists() else []
original = list(lines)


def section_bounds(name: str) -> tuple[int, int] | None:
    start = None
    for i, line in enumerate(lines):
        header = re.match(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$", line)
        if header and start is not None:
            return start, i
        if header and header.group(1).strip() == name:
            start = i
    return (start, len(lines)) if start is not None else None


for section, (key, value) in wanted.items():
    bounds = section_bounds(section)
    if bounds is None:
        if lines and lines[-1].strip():
            lines.append("")
        lines += [f"[{section}]", f"{key} = {value}"]
        continue
    start, end = bounds
    key_re = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for i in range(start + 1, end):
        if key_re.match(lines[i]):
            lines[i] = f"{key} = {value}"
            break
    else:
        lines.insert(start + 1, f"{key} = {value}")

if lines != original:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    print("changed")
else:
    print("unchanged")
PYEOF
) || die "could not update $CONTAINERS_CONF"
if [ "$conf_result" = changed ]; then
  say "did: set default_ulimits = [] and runtime = \"runc\" in $CONTAINERS_CONF"
else
  say "ok: $CONTAINERS_CONF has default_ulimits = [] and runtime = \"runc\""
fi

# --- 3. podman-compose on PATH ------------------------------------------------------------------
# Harbor 0.25 (environments/docker/runtime.py::resolve_podman_runtime) first asks `podman compose`
# (podman >= 4.7 only; Debian's 4.3 lacks it), then falls back to shutil.which("podman-compose").
# Debian's podman-compose 1.0 lacks --in-pod, so the venv's (>= 1.6) must come first on PATH.
# selfbench/harbor_adapter.py also prepends the venv's bin dir for processes started without this.
pc_pin=$(grep -iE '^podman-compose==' "$ROOT/requirements.txt" 2>/dev/null | head -1 || true)
pc_pin=${pc_pin:-podman-compose==1.6.0}
[ -x "$VENV/bin/python" ] || die "no virtualenv at $VENV: create it first (python3.12 -m venv $VENV && $VENV/bin/pip install -r requirements.txt) or set VENV"
if [ ! -x "$VENV/bin/podman-compose" ]; then
  say "did: pip install $pc_pin into $VENV"
  "$VENV/bin/pip" install -q "$pc_pin" || die "pip install $pc_pin failed"
fi
pc_version=$("$VENV/bin/podman-compose" --version 2>/dev/null | sed -n 's/^podman-compose version \([0-9.]*\).*/\1/p' | head -1)
[ -n "$pc_version" ] || die "$VENV/bin/podman-compose does not run"
if ! printf '%s\n%s\n' 1.6 "$pc_version" | sort -V -C; then
  die "podman-compose $pc_version in $VENV is older than 1.6 (Harbor passes --in-pod): $VENV/bin/pip install '$pc_pin'"
fi
link=/usr/local/bin/podman-compose
if [ "$(readlink -f "$link" 2>/dev/null || true)" != "$(readlink -f "$VENV/bin/podman-compose")" ]; then
  "${SUDO[@]}" ln -sfn "$VENV/bin/podman-compose" "$link"
  say "did: linked $link -> $VENV/bin/podman-compose"
fi
found=$(command -v podman-compose || true)
if [ "$(readlink -f "$found" 2>/dev/null || true)" != "$(readlink -f "$VENV/bin/podman-compose")" ]; then
  die "podman-compose on PATH is $found, not $VENV/bin/podman-compose: put /usr/local/bin before /usr/bin in PATH or remove Debian's podman-compose"
fi
say "ok: podman-compose $pc_version on PATH ($found)"

podman info >/dev/null 2>&1 || die "'podman info' fails: run 'podman info' to see why (runtime runc needs the runc package)"
say "ok: podman info works (runtime $(podman info --format '{{.Host.OCIRuntime.Name}}' 2>/dev/null || echo '?'))"

# --- 4. images built from debootstrap -----------------------------------------------------------
# No registry is reachable for images, so the base layers come from Debian's own package mirror.
recipe_of() { printf '%s' "$*" | sha256sum | cut -c1-16; }
extra_cas=()
if [ -d "$EXTRA_CA_DIR" ]; then
  while IFS= read -r -d '' crt; do extra_cas+=("$crt"); done < <(find "$EXTRA_CA_DIR" -name '*.crt' -type f -print0 | sort -z)
fi
ca_digest=none
[ ${#extra_cas[@]} -gt 0 ] && ca_digest=$(cat "${extra_cas[@]}" | sha256sum | cut -c1-16)

image_recipe() {
  podman image inspect --format "{{index .Labels \"$RECIPE_LABEL\"}}" "$1" 2>/dev/null || true
}

# build_rootfs_image IMAGE SUITE PACKAGES [STOPSIGNAL]
build_rootfs_image() {
  local image=$1 suite=$2 packages=$3 stop_signal=${4:-}
  local recipe
  recipe=$(recipe_of "$suite" minbase "$packages" "$ca_digest" ${stop_signal:+"stop=$stop_signal"})
  local stop_change=()
  [ -n "$stop_signal" ] && stop_change=(--change "STOPSIGNAL $stop_signal")
  local have
  have=$(image_recipe "$image")
  if [ "$have" = "$recipe" ]; then
    say "ok: image $image present (recipe $recipe: $suite minbase + $packages)"
    return 0
  fi
  if [ -n "$have" ] || podman image exists "$image" 2>/dev/null; then
    say "found: image $image has recipe '${have:-none}', want $recipe: rebuilding"
  fi
  local work t0 old_id
  t0=$(date +%s)
  old_id=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
  work=$(mktemp -d /var/tmp/selfbench-rootfs.XXXXXX)
  # shellcheck disable=SC2064  # expand $work now: it is local
  trap "rm -rf '$work'" EXIT
  say "did: debootstrap --variant=minbase --include=$packages $suite (this takes about a minute)"
  if ! "${SUDO[@]}" debootstrap --variant=minbase --include="$packages" "$suite" "$work/rootfs" "$DEBIAN_MIRROR" \
      >"$work/debootstrap.log" 2>&1; then
    tail -20 "$work/debootstrap.log" >&2
    die "debootstrap $suite failed (log above; is $DEBIAN_MIRROR reachable?)"
  fi
  if [ ${#extra_cas[@]} -gt 0 ]; then
    "${SUDO[@]}" cp "${extra_cas[@]}" "$work/rootfs/usr/local/share/ca-certificates/"
    "${SUDO[@]}" chroot "$work/rootfs" update-ca-certificates >/dev/null 2>&1 \
      || die "update-ca-certificates in the $suite rootfs failed"
    say "did: added ${#extra_cas[@]} CA certificate(s) from $EXTRA_CA_DIR to $image"
  fi
  # Downloaded .debs are only dead weight in the image; apt works again after `apt-get update`.
  "${SUDO[@]}" rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
  "${SUDO[@]}" tar -C "$work/rootfs" -c . | podman import --quiet \
      --change "LABEL $RECIPE_LABEL=$recipe" \
      --change "LABEL org.selfbench.packages=$packages" \
      --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
      --change 'CMD ["/bin/bash"]' \
      "${stop_change[@]}" \
      --message "selfbench: debootstrap minbase $suite + $packages" \
      - "$image" >/dev/null || die "podman import of $image failed"
  "${SUDO[@]}" rm -rf "$work"
  trap - EXIT
  # Drop the replaced image unless something still uses it (podman refuses then, which is fine).
  if [ -n "$old_id" ] && podman rmi "$old_id" >/dev/null 2>&1; then
    say "did: removed the previous $image (${old_id:0:12})"
  fi
  say "did: built $image in $(( $(date +%s) - t0 ))s ($(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%d MB", $1/1000000}'))"
}

# Sandboxes (gates, trials, authoring) run `sleep infinity` under a shell as PID 1, which ignores SIGTERM: every
# `podman stop` waited its 10 s grace period (twice per gate with a separate verifier). SIGKILL stops them at once;
# images built FROM this one inherit it.
build_rootfs_image "$BASE_IMAGE" "$BASE_SUITE" "$BASE_PACKAGES" SIGKILL
if [ "$WANT_APP_BASE" = 1 ]; then
  build_rootfs_image "$APP_BASE_IMAGE" "$APP_BASE_SUITE" "$APP_BASE_PACKAGES"
fi

# --- 5. the app image ---------------------------------------------------------------------------
if [ "$WANT_APP_IMAGE" = 1 ]; then
  t0=$(date +%s)
  say "did: podman build -t $APP_IMAGE --build-arg BASE_IMAGE=$APP_BASE_IMAGE $ROOT"
  podman build -q -t "$APP_IMAGE" --build-arg "BASE_IMAGE=$APP_BASE_IMAGE" -f "$ROOT/Dockerfile" "$ROOT" >/dev/null \
    || die "podman build of the app image failed (rerun: podman build --build-arg BASE_IMAGE=$APP_BASE_IMAGE $ROOT)"
  say "did: built $APP_IMAGE in $(( $(date +%s) - t0 ))s"
fi

# --- 6. the agents toolchain ---------------------------------------------------------------------
# Harbor's installers for claude-code, codex, pi and mini-swe-agent fetch from vendor hosts these machines cannot
# reach, so the pinned CLIs come from the npm registry (host npm, `npm ci` of sandbox/agents/package-lock.json) and
# PyPI (inside the build). The image is tagged with the recipe's hash; its /opt/agents is unpacked to
# $AGENTS_DIR/<hash> and $AGENTS_DIR/current points at it. A second run with nothing changed only checks.
if [ "$WANT_AGENTS" = 1 ]; then
  src="$ROOT/sandbox/agents"
  base_id=$(podman image inspect --format '{{.Id}}' "$BASE_IMAGE")
  agents_recipe=$( (cd "$src" && cat Dockerfile package.json package-lock.json requirements-mini-swe-agent.txt \
    gateway-relay.js env.sh; echo "$base_id") | sha256sum | cut -c1-16)
  agents_image="$AGENTS_IMAGE_REPO:$agents_recipe"
  tree="$AGENTS_DIR/$agents_recipe"
  if [ -f "$tree/versions.json" ] && [ "$(readlink "$AGENTS_DIR/current" 2>/dev/null || true)" = "$agents_recipe" ]; then
    say "ok: agents $agents_image unpacked at $tree ($(tr -d ' \n' <"$tree/versions.json"))"
  else
    t0=$(date +%s)
    if ! podman image exists "$agents_image"; then
      command -v npm >/dev/null || die "npm is needed to stage the agent CLIs (apt-get install npm, or Node.js with npm)"
      stage=$(mktemp -d /var/tmp/selfbench-agents.XXXXXX)
      # shellcheck disable=SC2064  # expand $stage now
      trap "rm -rf '$stage'" EXIT
      mkdir -p "$stage/npm"
      cp "$src/package.json" "$src/package-lock.json" "$stage/npm/"
      cp "$src/Dockerfile" "$src/requirements-mini-swe-agent.txt" "$src/gateway-relay.js" "$src/env.sh" "$stage/"
      say "did: npm ci of sandbox/agents (claude-code, codex, pi, Node.js)"
      (cd "$stage/npm" && npm ci --no-audit --no-fund --loglevel=error >"$stage/npm.log" 2>&1) \
        || { tail -20 "$stage/npm.log" >&2; die "npm ci in $stage/npm failed (log above)"; }
      rm -f "$stage/npm/package.json" "$stage/npm/package-lock.json"
      say "did: podman build $agents_image (mini-swe-agent from PyPI inside)"
      podman build -q -t "$agents_image" --label "$RECIPE_LABEL=$agents_recipe" \
          --build-arg "BASE_IMAGE=$BASE_IMAGE" "$stage" >"$stage/build.log" 2>&1 \
        || { tail -30 "$stage/build.log" >&2; die "podman build of $agents_image failed (log above)"; }
      rm -rf "$stage"
      trap - EXIT
    fi
    mkdir -p "$AGENTS_DIR"
    rm -rf "$tree.partial"
    cid=$(podman create "$agents_image" true)
    podman cp "$cid:/opt/agents" "$tree.partial" || { podman rm -f "$cid" >/dev/null; die "podman cp of /opt/agents failed"; }
    podman rm -f "$cid" >/dev/null
    rm -rf "$tree" && mv "$tree.partial" "$tree"
    ln -sfn "$agents_recipe" "$AGENTS_DIR/current.new" && mv -T "$AGENTS_DIR/current.new" "$AGENTS_DIR/current"
    # Older trees and images are dead weight once current moved on (a running trial keeps its mount's inode).
    for old in "$AGENTS_DIR"/*; do
      name=$(basename "$old")
      [ "$name" = current ] || [ "$name" = "$agents_recipe" ] || { rm -rf "$old"; say "did: removed old agents tree $name"; }
    done
    for old in $(podman images --format '{{.Repository}}:{{.Tag}}' --filter "reference=$AGENTS_IMAGE_REPO" ); do
      [ "$old" = "$agents_image" ] || podman rmi "$old" >/dev/null 2>&1 || true
    done
    say "did: agents $agents_image unpacked at $tree in $(( $(date +%s) - t0 ))s ($(tr -d ' \n' <"$tree/versions.json"))"
  fi
fi

say "done in $(( $(date +%s) - START ))s"
