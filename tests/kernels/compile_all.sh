#!/usr/bin/env bash
# Compile every test kernel in good/ and bad/ with the harness's sm_90a flags, one at a time,
# and report which failed. bad/syntax_error.cu is the one file that is expected to fail; the
# script exits non-zero if any other file fails, or if that one compiles.
#
# Needs no GPU. -lcuda needs a libcuda.so at link time: the toolkit's stubs directory is used
# when one exists (set CUDA_STUBS to override); otherwise an empty stand-in with the real
# soname is built in a temporary directory, which is enough because no test kernel calls the
# driver API.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT_DIR:-/tmp/cudal2_kernels}"
mkdir -p "$out"

stubs="${CUDA_STUBS:-}"
if [ -z "$stubs" ]; then
    for d in "${CUDA_HOME:-/nonexistent}/lib64/stubs" /usr/local/cuda/lib64/stubs \
             /usr/local/cuda/targets/x86_64-linux/lib/stubs \
             "$(dirname "$(command -v nvcc)")/../lib64/stubs"; do
        if [ -e "$d/libcuda.so" ]; then stubs="$d"; break; fi
    done
fi
if [ -z "$stubs" ]; then
    stubs="$(mktemp -d)"
    trap 'rm -rf "$stubs"' EXIT
    echo 'void cudal2_libcuda_stand_in(void) {}' > "$stubs/stub.c"
    gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$stubs/libcuda.so" "$stubs/stub.c" || exit 2
    echo "note: no CUDA stubs directory found; linking against an empty stand-in in $stubs"
fi

flags=(-O3 -std=c++17 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a
       -lcuda "-L$stubs")
expected_fail="bad/syntax_error.cu"
unexpected=0
for f in "$here"/good/*.cu "$here"/bad/*.cu; do
    rel="${f#"$here"/}"
    so="$out/$(echo "${rel%.cu}" | tr / _).so"
    if nvcc "${flags[@]}" -o "$so" "$f" > "$out/$(basename "$so").log" 2>&1; then
        status=ok
    else
        status=FAILED
    fi
    if [ "$rel" = "$expected_fail" ]; then
        if [ "$status" = FAILED ]; then status="FAILED (expected)"; else status="ok (UNEXPECTED: should fail)"; unexpected=1; fi
    elif [ "$status" = FAILED ]; then
        unexpected=1
        echo "---- $rel"; tail -n 20 "$out/$(basename "$so").log"
    fi
    printf '%-40s %s\n' "$rel" "$status"
done
if [ "$unexpected" -ne 0 ]; then echo "some results were unexpected"; exit 1; fi
echo "all as expected"
