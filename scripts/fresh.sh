# Sourced by the device scripts: what "a new user's machine" means here, in one place.
#   fresh_copy DEST    copy the tree the device tool carried (tracked and unignored files, .whl
#                      included) into DEST, less .git and build outputs: what a fresh clone holds
#   empty_caches DIR   point HOME, XDG_CACHE_HOME (build cache, dispatcher) and the cupy kernel
#                      cache at empty folders under DIR
fresh_copy() {
    mkdir -p "$1"
    tar --exclude=./.git --exclude=./build --exclude='*.egg-info' --exclude=__pycache__ -cf - . | tar -C "$1" -xf -
}
empty_caches() {
    export HOME=$1/home XDG_CACHE_HOME=$1/cache CUPY_CACHE_DIR=$1/cache/cupy
    mkdir -p "$HOME" "$XDG_CACHE_HOME"
}
