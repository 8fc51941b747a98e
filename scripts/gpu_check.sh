#!/usr/bin/env bash
# Run the GPU-marked tests on the device machine (carry .whl):
#   device run: bash scripts/gpu_check.sh [pytest args]
set -o pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
python3 -m pytest -m gpu -p no:cacheprovider -q -rA "$@" 2>&1 | tee "${OUT:-/tmp}/gpu_check.log"
