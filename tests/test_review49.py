"""Review 49: what a v2 kernel file still made the compiler read through the allowed headers' own
macros (a computed include expanding the file's macros; libcu++'s wrappers of _Pragma and
__has_include)."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from cudal2.harness import policy

from .conftest import BAD, NAIVE, needs_nvcc


def refused(src: str) -> bool:
    found = policy.check_device_only(src + NAIVE)
    return bool(found) and {v.rule for v in found} == {"header"}


# --- a macro defined before an #include reaches the allowed headers' computed includes -----------
# cutlass/predicate_vector.h: `#include CUDA_STD_HEADER(cassert)`, whose argument is macro-expanded;
# cuda/std/version: `#if _CCCL_HAS_INCLUDE(<version>)`, whose operand is too (checked with nvcc 13).

COMPUTED = '#define cassert ../../../../../../../../../../../../FILE\n#include <cutlass/predicate_vector.h>\n'


def test_a_lower_case_macro_before_an_include_is_refused():
    assert refused(COMPUTED.replace("FILE", "etc/hostname"))
    assert refused("#undef version\n#include <cuda/std/version>\n")
    assert refused('#include <cutlass/cutlass.h>\n#define CUDA_STD_HEADER(h) </etc/hostname>\n'
                   '#include <cutlass/predicate_vector.h>\n')


@pytest.mark.parametrize("src", [
    "#define NDEBUG 1\n#define CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL 1\n#include <cuda_fp16.h>\n",
    "#define BM 128\n#define TILE_K (BM / 4)\n#include <cuda_fp16.h>\n", "#define __CUDA_NO_HALF_OPERATORS__\n#include <cuda_fp16.h>\n",
    "#include <cuda_fp16.h>\n#define cassert(x) ((void)0)\n#define tile_m 128\n#undef tile_m\n",
])
def test_upper_case_macros_before_and_any_after_the_includes_pass(src):
    assert policy.check_device_only(src + "\n" + NAIVE.replace("#include", "// include")) == []


@needs_nvcc
def test_the_computed_include_really_reads_the_file(tmp_path):
    from cudal2.harness.build import cutlass_include
    inc = cutlass_include()
    if inc is None:
        pytest.skip("CUTLASS headers not installed")
    secret = tmp_path / "secret.txt"
    secret.write_text("zz49_secret_token\n")
    src = tmp_path / "k.cu"
    src.write_text(COMPUTED.replace("FILE", str(secret).lstrip("/")) + 'extern "C" __global__ void k(int* p) { p[0] = 1; }\n')
    r = subprocess.run(["nvcc", "-ptx", "-arch=compute_90a", "-std=c++17", "-I", inc, str(src), "-o", str(tmp_path / "k.ptx")],
                       capture_output=True, text=True, timeout=300)
    assert "zz49_secret_token" in r.stdout + r.stderr


def _include_roots() -> list[Path]:
    from cudal2.harness.build import cutlass_include
    roots = [Path(p) for p in ("/usr/local/cuda/include", "/usr/local/cuda/targets/x86_64-linux/include") if Path(p).is_dir()]
    if inc := cutlass_include():
        roots.append(Path(inc))
    return roots


def _headers():
    for root in _include_roots():
        for dirpath, _, files in os.walk(root):
            for f in files:
                try:
                    yield Path(dirpath, f).read_text(errors="replace").replace("\\\n", " ")
                except OSError:
                    continue


def test_no_token_of_an_installed_computed_include_may_be_defined_before_an_include():
    """The upper-case allowance is safe only while no computed include or `_CCCL_HAS_INCLUDE`
    operand in the installed headers holds an upper-case name (other than CUDA_STD_HEADER itself)."""
    if not _include_roots():
        pytest.skip("no CUDA headers")
    computed = re.compile(r"^[ \t]*#[ \t]*include(?:_next)?[ \t]+([A-Za-z_].*)$|HAS_INCLUDE\s*\(([^)]*)\)", re.M)
    tokens = set()
    for text in _headers():
        for m in computed.finditer(text):
            tokens |= set(re.findall(r"[A-Za-z_]\w*", re.sub(r"//.*|/\*.*", "", m.group(1) or m.group(2))))
    tokens -= {"_X", "define"}
    assert "cassert" in tokens and "CUDA_STD_HEADER" in tokens
    assert not [t for t in tokens if policy._CONFIG_MACRO.fullmatch(t)]


# --- libcu++'s macros that pass their argument to _Pragma or __has_include -----------------------

WRAPPED = {
    "pragma": '#include <cuda/std/cstdint>\n_CCCL_PRAGMA(GCC dependency "/etc/hostname")\n',
    "has_include": '#include <cuda/std/cstdint>\n#if _CCCL_HAS_INCLUDE("/etc/hostname")\n#endif\n',
    "gcc_warning": '#include <cuda/std/cstdint>\nLIBCUDACXX_COMP_DEPR_IMPL(x)\n',
}


@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_a_header_macro_wrapping_pragma_or_has_include_is_refused(name):
    assert refused(WRAPPED[name])


@needs_nvcc
def test_the_wrapped_has_include_really_probes(tmp_path):
    out = []
    for path in ("/etc/hostname", str(tmp_path / "absent")):
        src = tmp_path / "k.cu"
        src.write_text(f'#include <cuda/std/cstdint>\n#if _CCCL_HAS_INCLUDE("{path}")\n#error zz49_exists\n#endif\n'
                       'extern "C" __global__ void k(int* p) { p[0] = 1; }\n')
        r = subprocess.run(["nvcc", "-ptx", "-arch=compute_90a", str(src), "-o", str(tmp_path / "k.ptx")],
                           capture_output=True, text=True, timeout=300)
        out.append("zz49_exists" in r.stdout + r.stderr)
    assert out == [Path("/etc/hostname").exists(), False]


def test_every_installed_wrapper_of_pragma_or_has_include_is_refused():
    """Function-like macros of the installed headers whose body passes a parameter on to `_Pragma`,
    `__has_include` or another such macro: each is refused by name."""
    if not _include_roots():
        pytest.skip("no CUDA headers")
    define = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)(.*)$", re.M)
    defs: dict[str, list[tuple[list[str], str]]] = {}
    for text in _headers():
        if "_Pragma" in text or "has_include" in text or "_CCCL_PRAGMA" in text or "HAS_INCLUDE" in text:
            for m in define.finditer(text):
                params = [p.strip() for p in m.group(2).split(",") if p.strip()]
                defs.setdefault(m.group(1), []).append((params, m.group(3)))
    base = re.compile(r"_Pragma\s*\(\s*[^\s\"]|__has_include|__has_embed")
    wrappers = {n for n, ds in defs.items() if any(base.search(b) for _, b in ds)}
    while True:
        calls = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(wrappers))))
        more = {n for n, ds in defs.items() if n not in wrappers and any(
            calls.search(b) and any(re.search(r"\b%s\b" % re.escape("__VA_ARGS__" if p == "..." else p), b) for p in ps)
            for ps, b in ds)}
        if not more:
            break
        wrappers |= more
    assert {"_CCCL_PRAGMA", "_CCCL_HAS_INCLUDE"} <= wrappers
    assert [w for w in sorted(wrappers) if not policy._HEADER_WRAPPERS.fullmatch(w)] == []


@needs_nvcc
@pytest.mark.parametrize("name", ["zz49_computed_include_macro.cu", "zz49_cccl_pragma_oracle.cu"])
def test_the_kernels_stop_at_policy(cfg, name):
    from cudal2.harness.build import build
    r = build((BAD / name).read_text(), cfg.build)
    assert not r.ok and r.stage == "policy" and "header" in r.reason, r.reason
