#!/usr/bin/env bash
# Whole decoder layers as a user runs them, on the GPU machine (carry .whl): the wheel of a fresh copy
# of the tree in a fresh venv with empty caches (scripts/fresh_wheel_env.sh), `cudal2 library build`,
# then eval/decoder_layer.py from a folder outside any source tree, over every model config in
# eval/models at M = $MS (default 1,16,128,512), and an A/A run of $AA_MODEL (the method's noise).
# Results: $OUT/$1.json and $OUT/$1_aa.json.
#   device run: [MS=1,16] [AA_MODEL=llama3_8b] bash scripts/decoder_check.sh NAME
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp}
name=${1:?name the results file}
source scripts/fresh.sh
src=$(mktemp -d /tmp/cudal2-copy.XXXXXX)
fresh_copy "$src"
source "$src/scripts/fresh_wheel_env.sh"
cd "$tmp"
cp "$src/eval/decoder_layer.py" .
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$venv_py" -m cudal2 library build
configs=()
for c in "$src"/eval/models/*.json; do configs+=(--config "$c"); done
"$venv_py" decoder_layer.py "${configs[@]}" --m "${MS:-1,16,128,512}" --out "$out/$name.json"
"$venv_py" decoder_layer.py --config "$src/eval/models/${AA_MODEL:-llama3_8b}.json" --m "${MS:-1,16,128,512}" \
    --aa --out "$out/${name}_aa.json"
