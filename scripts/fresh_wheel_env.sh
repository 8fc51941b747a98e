# Sourced by scripts/wheel_check.sh and scripts/product_check.sh on the GPU machine (carry .whl):
# build the wheel of the tree at $src, install it (not editable) into a fresh venv under a fresh
# temp folder that sees the machine's own torch and cupy (through a .pth: the device's python is
# itself a venv, whose packages --system-site-packages would not show) and nothing of the source
# tree, with empty caches. Sets tmp (the folder) and venv_py (the venv's python).
source "$src/scripts/fresh.sh"
tmp=$(mktemp -d /tmp/cudal2-wheel.XXXXXX)
empty_caches "$tmp"
unset PYTHONPATH
(cd "$src" && python3 -m pip wheel -q --no-deps --no-build-isolation -w "$tmp/dist" . >/dev/null)
python3 -m venv "$tmp/venv"
venv_py=$tmp/venv/bin/python
"$venv_py" -c "import site, sys; open(site.getsitepackages()[0] + '/machine.pth', 'w').write(sys.argv[1])" \
    "$(python3 -c 'import site; print(chr(10).join(site.getsitepackages()))')"
# --no-deps: the machine has no package index; its own packages and the carried wheels stand in
# for the dependencies (a resolver run against an index is CI's part: tests/test_packaging.py).
"$venv_py" -m pip install -q --no-deps "$tmp"/dist/cudal2-*.whl "$src"/.whl/*.whl
echo "installed: $("$venv_py" -c 'import cudal2, os; print(os.path.dirname(cudal2.__file__))')"
