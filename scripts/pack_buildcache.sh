#!/usr/bin/env bash
# Pack a build cache warmed here (`cudal2 generate --build-only`, [build] cache_dir) into .bcpack/ so a
# device call can carry it (carry [".whl", ".bcpack"]) and unpack it with `tar xJf .bcpack/cache.tar.xz`.
# xz shrinks the CUTLASS libraries about 4.7x; only finished builds (folders with a build.json) go in.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${1:-.buildcache}
mkdir -p .bcpack
dirs=$(cd "$cache/.." && for d in "$(basename "$cache")"/*/; do [ -f "$d/build.json" ] && echo "${d%/}"; done)
tar cJf .bcpack/cache.tar.xz -C "$(dirname "$cache")" $dirs
echo "$(echo "$dirs" | wc -l) builds -> .bcpack/cache.tar.xz ($(du -h .bcpack/cache.tar.xz | cut -f1))"
