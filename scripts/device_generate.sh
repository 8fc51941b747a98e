#!/usr/bin/env bash
# On the GPU machine (carry .whl, and runs/ to resume): `cudal2 generate` over $SHAPES with the settings
# in $CONFIG for at most $1 seconds, then pack the library folder and the run database into $OUT.
# Resumes where it stopped. Extra arguments go to `cudal2 generate` (e.g. --missing-only).
set -o pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh || exit 1
secs=${1:-420}; shift
mkdir -p runs
timeout --signal=INT "$secs" python3 -m cudal2 generate --shapes "${SHAPES:-eval/dev_shapes.json}" \
    -c "${CONFIG:-eval/generate_dev.toml}" "$@" 2>&1 | tee "${OUT:-/tmp}/generate.log" | grep -vE "^\s*$" | tail -60
tar czf "${OUT:-/tmp}/runs.tgz" runs kernels_out
