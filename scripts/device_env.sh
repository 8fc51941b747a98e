# Sourced at the start of every command on the GPU machine: installs the carried wheels
# (scripts/fetch_wheels.sh) into /tmp/site and puts them and the repo on the path.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "installing carried wheels failed"; return 1; }
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
