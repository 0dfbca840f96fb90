#!/bin/bash
# The reference solution: apply gold.patch to the repository at its base.
set -euo pipefail
cd /app
git apply --whitespace=nowarn /solution/gold.patch || patch -p1 --batch --forward < /solution/gold.patch
