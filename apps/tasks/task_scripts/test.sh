#!/bin/bash
# Harbor's verifier entry point. The reward is decided by verify.py from the agent's /app changes applied to a clean
# copy of the base (test paths excluded, held-out tests restored); 0 unless it says otherwise.
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
python3 -P /tests/verify.py --tests /tests --app /app --logs /logs/verifier --work /tmp/selfbench-verify --kill-strays
