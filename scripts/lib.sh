# Shared setup steps for scripts/run and scripts/test. Source it; every step is idempotent and quick when done.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
STATE="$ROOT/.state"
mkdir -p "$STATE"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf '\033[31mERROR: %s\033[0m\n' "$*" >&2; exit 1; }

# Find a Python >= 3.12 without the user's help: PATH first, then pyenv's versions, then common prefixes.
find_python() {
  local c candidates=()
  for c in python3.14 python3.13 python3.12 python3; do
    command -v "$c" >/dev/null 2>&1 && candidates+=("$(command -v "$c")")
  done
  local roots=()
  command -v pyenv >/dev/null 2>&1 && roots+=("$(pyenv root 2>/dev/null)")
  roots+=("${PYENV_ROOT:-$HOME/.pyenv}" /root/.pyenv /opt/pyenv)
  local r
  for r in "${roots[@]}"; do
    [ -d "$r/versions" ] || continue
    for c in "$r"/versions/3.1[2-9]*/bin/python3.1[2-9] "$r"/versions/3.1[2-9]*/bin/python3; do
      [ -x "$c" ] && candidates+=("$c")
    done
  done
  for c in /usr/local/bin/python3.1[2-9] /usr/bin/python3.1[2-9]; do [ -x "$c" ] && candidates+=("$c"); done
  for c in "${candidates[@]}"; do
    if PYENV_VERSION= "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then
      echo "$c"; return 0
    fi
  done
  return 1
}

# ensure_venv <requirements file>: a venv on Python 3.12+ with the requirements installed (skipped when unchanged).
ensure_venv() {
  local req="$1"
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
    local py
    py="$(find_python)" || die "SelfBench needs Python 3.12 or newer (Harbor and Django 6 require it) and none was found.
Install one (for example: 'pyenv install 3.12' or 'apt-get install python3.12') and run this again."
    say "creating .venv with $py ($("$py" --version))"
    rm -rf "$VENV"
    "$py" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
  fi
  local stamp="$VENV/.req-$(basename "$req").sha"
  local want
  want="$(cat "$ROOT"/requirements*.txt | sha256sum | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "installing $(basename "$req") into .venv"
    "$VENV/bin/pip" install -q -r "$ROOT/$req" 2>&1 | grep -v "^WARNING: Location" || true
    "$VENV/bin/python" -c 'import django, harbor' || die "the install of $req failed"
    echo "$want" > "$stamp"
  else
    say ".venv is up to date ($("$VENV/bin/python" --version))"
  fi
  export PATH="$VENV/bin:$PATH"
}

# Secrets for a local run, generated once and kept in .state/ (git-ignored).
ensure_local_secrets() {
  [ -f "$STATE/local.env" ] || {
    say "generating local secrets in .state/local.env"
    {
      echo "SECRET_KEY=$("$VENV/bin/python" -c 'import secrets;print(secrets.token_urlsafe(48))')"
      echo "SECRETS_ENCRYPTION_KEYS=$("$VENV/bin/python" -c 'import secrets;print(secrets.token_urlsafe(32))')"
      echo "DEMO_PASSWORD=$("$VENV/bin/python" -c 'import secrets;print(secrets.token_urlsafe(9))')"
    } > "$STATE/local.env"
    chmod 600 "$STATE/local.env"
  }
  set -a; . "$STATE/local.env"; set +a
}

ensure_containers() {
  if [ -x "$ROOT/scripts/containers.sh" ] || [ -f "$ROOT/scripts/containers.sh" ]; then
    VENV="$VENV" bash "$ROOT/scripts/containers.sh" "$@"
  else
    die "scripts/containers.sh is missing"
  fi
}
