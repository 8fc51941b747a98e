#!/usr/bin/env bash
# Run the GPU-marked tests on the device machine (carry .whl) as a new user would: from a fresh
# copy of the tree the device tool carried (tracked and unignored files; no .git, no build
# outputs), with empty caches (a fresh HOME and XDG_CACHE_HOME: no
# build cache, no dispatcher, no cupy kernel cache).
#   device run: bash scripts/gpu_check.sh [pytest args]
set -o pipefail
cd "$(dirname "$0")/.."
source scripts/fresh.sh
fresh=$(mktemp -d /tmp/cudal2-fresh.XXXXXX)
fresh_copy "$fresh/repo"
cd "$fresh/repo" || exit 1
empty_caches "$fresh"
source scripts/device_env.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
echo "fresh tree: $PWD, caches under $fresh"
# -v: a line per test as it ends, so a run cut by the device's time limit still says which passed
# (the 2026-12-08 run, cut before pytest's summary, had to be read by position); durations say how
# to split the next run into calls
python3 -m pytest -m gpu -p no:cacheprovider -v -rfEsxX --durations=40 "$@" 2>&1 | tee "${OUT:-/tmp}/gpu_check.log"
