#!/usr/bin/env bash
# On the GPU machine (carry .whl, and runs/ to resume): search over the dev shapes for at most
# $1 seconds, then pack the library and the run database into $OUT. Resumes where it stopped.
set -o pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh || exit 1
secs=${1:-420}
mkdir -p runs
timeout --signal=INT "$secs" python3 -m cudal2 generate --shapes ${SHAPES:-eval/dev_shapes.json} -c eval/generate_dev.toml 2>&1 \
    | tee "${OUT:-/tmp}/generate.log" | grep -vE "^\s*$" | tail -40
tar czf "${OUT:-/tmp}/runs.tgz" runs
