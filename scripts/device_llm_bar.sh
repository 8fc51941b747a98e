#!/usr/bin/env bash
# Issue-4 bar on the GPU machine (carry .whl): `cudal2 generate` on three dev shapes with the
# template proposer plus a tiny Hugging Face model built here, offline. Writes the trace and the
# run database to $OUT.
set -o pipefail
cd "$(dirname "$0")/.."
source scripts/device_env.sh || exit 1
python3 -c "from tests.llm_fixtures import tiny_model; print(tiny_model('/tmp/tiny'))" || exit 1
echo '{"shapes": [[64, 256, 256], [128, 8192, 4096], [4096, 4096, 4096]]}' > /tmp/llm_shapes.json
cat > /tmp/llm.toml <<'TOML'
[search]
batch = 8
budget_minutes = 0.75
max_candidates = 16
[llm]
samples = 4
max_tokens = 256
trace = "runs/llm_trace.jsonl"
[run]
db = "runs/llm.sqlite"
TOML
t0=$(date +%s)
timeout --signal=INT "${1:-300}" python3 -m cudal2 generate --shapes /tmp/llm_shapes.json -c /tmp/llm.toml --llm hf:/tmp/tiny 2>&1 \
    | grep -vE "^\s*$" | tail -25
echo "wall seconds: $(( $(date +%s) - t0 ))"
tar czf "${OUT:-/tmp}/llm_runs.tgz" runs
