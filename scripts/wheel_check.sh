#!/usr/bin/env bash
# The library as a pip user gets it, on the GPU machine (carry .whl): build the wheel, install it
# (not editable) into a fresh venv that sees the machine's own torch and cupy (through a .pth: the
# device's python is itself a venv, whose packages --system-site-packages would not show) and
# nothing of the source tree, and run the library's GPU tests there, with empty caches.
#   device run: bash scripts/wheel_check.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
tmp=$(mktemp -d /tmp/cudal2-wheel.XXXXXX)
export HOME=$tmp/home XDG_CACHE_HOME=$tmp/cache CUPY_CACHE_DIR=$tmp/cache/cupy
mkdir -p "$HOME"
unset PYTHONPATH
python3 -m pip wheel -q --no-deps --no-build-isolation -w "$tmp/dist" . >/dev/null
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -c "import site, sys; open(site.getsitepackages()[0] + '/machine.pth', 'w').write(sys.argv[1])" \
    "$(python3 -c 'import site; print(chr(10).join(site.getsitepackages()))')"
# --no-deps: the machine has no package index; its own packages and the carried wheels stand in
# for the dependencies (a resolver run against an index is CI's part: tests/test_packaging.py).
"$tmp/venv/bin/python" -m pip install -q --no-deps "$tmp"/dist/cudal2-*.whl "$src"/.whl/*.whl
cp -r "$src/tests" "$tmp/tests"
cd "$tmp"
echo "installed: $("$tmp/venv/bin/python" -c 'import cudal2, os; print(os.path.dirname(cudal2.__file__))')"
"$tmp/venv/bin/python" -m pytest -m gpu -p no:cacheprovider -q -rA tests/test_gpu_library.py tests/test_gpu_dispatch.py "$@" 2>&1 \
    | tee "${OUT:-/tmp}/wheel_check.log"
