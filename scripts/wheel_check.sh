#!/usr/bin/env bash
# The library as a pip user gets it, on the GPU machine (carry .whl): the wheel installed into a
# fresh venv with empty caches (scripts/fresh_wheel_env.sh), and the library's GPU tests run there.
#   device run: bash scripts/wheel_check.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
source scripts/fresh_wheel_env.sh
cp -r "$src/tests" "$tmp/tests"
cd "$tmp"
"$venv_py" -m pytest -m gpu -p no:cacheprovider -q -rA tests/test_gpu_library.py tests/test_gpu_dispatch.py "$@" 2>&1 \
    | tee "${OUT:-/tmp}/wheel_check.log"
