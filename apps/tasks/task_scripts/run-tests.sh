#!/bin/bash
# Run only this task's selected tests in TREE (default /app) and report each test's outcome.
#   run-tests.sh [TREE] [OUTCOMES_JSON]
# Prints one "SB-OUTCOME <passed|failed|skipped|error|missing> <node id>" line per test and writes them as JSON.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TREE="${1:-/app}"
OUT="${2:-/tmp/selfbench-outcomes.json}"
PY="${SB_PYTHON:-python3}"
mapfile -t IDS < <("$PY" -P -c 'import json,sys; c=json.load(open(sys.argv[1])); print("\n".join(c["fail_to_pass"]+c["pass_to_pass"]))' "$HERE/config.json")
exec "$PY" -P "$HERE/sb_pytest.py" --tree "$TREE" --out "$OUT" --ids "${IDS[@]}"
