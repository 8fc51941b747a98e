#!/usr/bin/env bash
# Run the GPU-marked tests on the device machine (carry .whl) as a new user would: from a fresh
# copy of the tree the device tool carried (tracked and unignored files; no .git, no build
# outputs), with empty caches (a fresh HOME and XDG_CACHE_HOME: no
# build cache, no dispatcher, no cupy kernel cache).
#   device run: bash scripts/gpu_check.sh [pytest args]
set -o pipefail
cd "$(dirname "$0")/.."
src=$PWD
fresh=$(mktemp -d /tmp/cudal2-fresh.XXXXXX)
mkdir "$fresh/repo" && tar -C "$src" --exclude=./.git --exclude=./build --exclude='*.egg-info' --exclude=__pycache__ \
    -cf - . | tar -C "$fresh/repo" -xf -
cd "$fresh/repo" || exit 1
export HOME=$fresh/home XDG_CACHE_HOME=$fresh/cache CUPY_CACHE_DIR=$fresh/cache/cupy
mkdir -p "$HOME" "$XDG_CACHE_HOME"
source scripts/device_env.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
echo "fresh tree: $PWD, caches under $fresh"
python3 -m pytest -m gpu -p no:cacheprovider -q -rA "$@" 2>&1 | tee "${OUT:-/tmp}/gpu_check.log"
