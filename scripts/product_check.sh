#!/usr/bin/env bash
# The product-path bench as a new user runs it, on the GPU machine (carry .whl): the wheel built from
# a fresh copy of the tree (tracked and unignored files; no .git, no build outputs) and installed
# into a fresh venv with empty caches (scripts/fresh_wheel_env.sh); then, from a folder outside any
# source tree, `cudal2 library build` and `cudal2 library bench --arch sm90 --served` over $SHAPES.
# With UPDATE_NEW=1, first (in the copy, with its own empty caches) `cudal2 library bench --update
# --new` measures the entries a search just published against F.linear, writes the copy's manifest
# (copied to $OUT/manifest.json) and the wheel ships it. Results: $OUT/$1.jsonl. The bench stops at
# $SECS seconds (default 540) and keeps its rows; RESUME=FILE (that file, carried back) goes on from it.
#   device run: SHAPES=eval/llm_shapes.json [UPDATE_NEW=1] [SECS=540] [RESUME=F] bash scripts/product_check.sh NAME
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
out=${OUT:-/tmp}
name=${1:?name the results file}
shapes=$PWD/${SHAPES:?give SHAPES=a shapes file}
if [ -n "${RESUME:-}" ]; then   # the cut run's file must travel with the tree (copy it under the repository)
    [ -f "$RESUME" ] || { echo "RESUME=$RESUME: no such file here; copy the cut run's rows into the repository first" >&2; exit 2; }
    cp "$RESUME" "$out/$name.jsonl"
fi
source scripts/fresh.sh
src=$(mktemp -d /tmp/cudal2-copy.XXXXXX)
fresh_copy "$src"
if [ "${UPDATE_NEW:-0}" = 1 ]; then
    (cd "$src" && empty_caches "$(mktemp -d /tmp/cudal2-update.XXXXXX)" \
        && source scripts/device_env.sh && python3 -m cudal2 library build \
        && python3 -m cudal2 library bench --arch sm90 --update --new --json "$out/${name}_new.jsonl")
    cp "$src/kernels_out/sm90/manifest.json" "$out/manifest.json"
fi
source "$src/scripts/fresh_wheel_env.sh"
cd "$tmp"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$venv_py" -m cudal2 library build
left=$(( ${SECS:-540} - ($(date +%s) - t0) ))
timeout --signal=INT "$left" "$venv_py" -m cudal2 library bench --arch sm90 --served --shapes "$shapes" \
    --json "$out/$name.jsonl" --resume || echo "the bench stopped after ${SECS:-540} s: rerun with RESUME=$name.jsonl"
echo "wall seconds: $(( $(date +%s) - t0 ))"
