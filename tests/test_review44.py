"""Review 44: what a candidate reached past the rules (see each section)."""

import shutil
import time

import pytest

from cudal2.harness import policy

from .conftest import BAD, KERNELS, NAIVE, needs_nvcc



# --- includes read as the preprocessor reads them ---------------------------------------------
# The include rule matched `^\s*#\s*include\s*[<"]` on the stripped text: a digraph, a splice, a
# lone CR, a computed include, #include_next, a line the stripper wrongly blanked, and a `..`
# under an allowed folder each brought any file nvcc can open into the compile.

SPELLINGS = {
    "digraph": '%:include </etc/hostname>\n',
    "splice": '#inc\\\nlude </etc/hostname>\n',
    "splice_with_blanks": '#include \\  \n</etc/hostname>\n',
    "lone_cr": 'int zz44;\r#include </etc/hostname>\n',
    "computed": '#define H </etc/hostname>\n#include H\n',
    "include_next": '#include_next <cuda_fp16.h>\n',
    "import": '#import <cuda_fp16.h>\n',
    "embed": '#embed "/dev/zero"\n',
    "raw_string": 'static_assert(sizeof(R"x(" /* )x") == 6, "");\n#include </etc/hostname>\n// */\n',
    "digit_separator": "const int q = 1'0; const char* t = \"'/*\";\n#include </etc/hostname>\n// */\n",
    "comment_before": '/*\n*/ #include </etc/hostname>\n',
    "comment_inside": '# /* x\n */ include </etc/hostname>\n',
    "dotdot": '#include <cuda/std/../../../cuda_pipeline.h>\n',
    "absolute": '#include "/etc/hostname"\n',
    "has_include_path": '#if __has_include("/etc/hostname")\n#endif\n',
    "has_include_macro": '#define P "/etc/hostname"\n#if __has_include(P)\n#endif\n',
}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_of_a_file_read_is_a_header_violation(name):
    found = policy.check_device_only(SPELLINGS[name] + NAIVE)
    assert found and {v.rule for v in found} == {"header"}, found   # (the raw string is refused itself too; review 48)


@pytest.mark.parametrize("name", ["digraph", "computed", "dotdot", "raw_string", "lone_cr"])
def test_the_host_policy_refuses_them_too(name):
    assert "header" in {v.rule for v in policy.check(SPELLINGS[name] + NAIVE)}


@pytest.mark.parametrize("src", [
    "#include <cuda_fp16.h>\n", "  #  include <cute/tensor.hpp>\n", "#include \"cuda/ptx\"\n",
    "%:include <cstdint>\n", "#if __has_include(<cuda/ptx>)\n#endif\n", "// #include </etc/passwd>\n",
    "#define X 1 // #include <a.h>\n",
])
def test_literal_includes_of_allowed_headers_pass(src):
    assert policy.check_device_only(src + NAIVE) == []


def test_a_header_may_not_leave_its_folder():
    assert policy.header_allowed("cuda/std/type_traits")
    for h in ("cuda/std/../../x.h", "cute/../../../etc/passwd", "/usr/include/stdio.h", "cutlass/a\\..\\b", ""):
        assert not policy.header_allowed(h), h


def test_directive_lines_are_numbered_in_the_source():
    src = "a\\\nb\n#in\\\nclude <x>\n%:include \"y\"\n#define Z\n"
    assert [(ln, h) for ln, _, h in policy.include_directives(src)] == [(3, "x"), (5, "y")]


@pytest.mark.timeout(60)
def test_the_include_scan_is_linear():
    for src in ("#include <cuda_fp16.h>\n" * 40_000, "/*\n" * 100_000, "\\\n" * 200_000, "%:" * 200_000,
                "__has_include(" * 40_000, "#include /*" * 40_000 + "\n", "\r" * 300_000):
        t = time.monotonic()
        policy.check_device_only(src)
        assert time.monotonic() - t < 3, src[:20]


@needs_nvcc
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["zz44_include_digraph_absolute.cu", "zz44_include_computed.cu",
                                  "zz44_include_hidden_by_raw_string.cu"])
def test_the_include_kernels_stop_at_policy(cfg, name):
    from cudal2.harness.build import build
    r = build((BAD / name).read_text(), cfg.build)
    assert not r.ok and r.stage == "policy" and "header" in r.reason, r.reason


def test_the_compiler_never_reads_the_callers_stdin(tmp_path):
    from cudal2.harness.build import _run_killable
    rc, out = _run_killable(["sh", "-c", "cat; echo done"], str(tmp_path), 10)
    assert rc == 0 and out.strip() == "done"


# --- the manifest reader: JSON the json module refuses past its decoder ------------------------

@pytest.mark.parametrize("text", ['{"version": 1, "entries": [{"id": ' + "1" * 5000 + "}]}",
                                  "[" * 100_000 + "]" * 100_000])
def test_a_manifest_json_cannot_hold_is_a_library_error(tmp_path, text):
    from cudal2.library import manifest
    (tmp_path / manifest.MANIFEST).write_text(text)
    with pytest.raises(manifest.LibraryError, match="cannot read the manifest"):
        manifest.read(tmp_path)


@pytest.mark.parametrize("text", ["a = " + "1" * 5000, "a = " + "[" * 100_000 + "]" * 100_000])
def test_a_config_toml_cannot_hold_is_a_config_error(tmp_path, text):
    from cudal2.config import Config, ConfigError
    (tmp_path / "c.toml").write_text(text)
    with pytest.raises(ConfigError, match="not valid TOML"):
        Config.load(tmp_path / "c.toml")


# --- a v2 build's compiler has a memory limit -------------------------------------------------
# A few macro lines made cicc grow past 24 GB within the build's timeout (bad/zz44_compile_memory_bomb).

@needs_nvcc
@pytest.mark.timeout(300)
def test_a_compile_memory_bomb_fails_at_the_memory_limit(cfg):
    import dataclasses
    from cudal2.harness.build import build
    small = dataclasses.replace(cfg.build, max_memory_mb=1024)
    r = build((BAD / "zz44_compile_memory_bomb.cu").read_text(), small)
    assert not r.ok and r.stage == "build" and r.seconds < 120, (r.reason, r.seconds)
    assert build(NAIVE, small).ok   # an honest v2 build needs about 100 MiB


def test_the_compilers_run_under_the_limits_with_their_temporaries_in_the_build_folder(tmp_path):
    from cudal2.harness.build import MAX_FILE_MB, _run_killable, bounded
    rc, out = _run_killable(bounded(["sh", "-c", "ulimit -v; ulimit -f; echo $TMPDIR"], 1000), str(tmp_path), 10)
    assert rc == 0 and out.split() == [str(1000 * 1024), str(MAX_FILE_MB * 2048), str(tmp_path)]


def test_a_missing_compiler_is_not_a_cached_build_failure(cfg, tmp_path):
    import dataclasses
    from cudal2.harness.build import build
    r = build(NAIVE, dataclasses.replace(cfg.build, nvcc="/nonexistent/nvcc", cache_dir=str(tmp_path)))
    assert not r.ok and "compiler not found" in r.reason
    assert not any(tmp_path.glob("*/build.json"))


# --- one source, one kernel: a build cannot tell when (or where) it runs ----------------------
# A source that tests __DATE__ built to one kernel when judged and to another when `cudal2 library
# build` rebuilt it later; and a rebuilt binary that differs from the judged one (another toolkit
# or host compiler: `#if __GNUC__ == 12`) was shipped and served on the old binary's measurements.

DATED = NAIVE.replace("acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);",
                      "acc = fmaf(__half2float(a[k]), __half2float(b[k]), acc);\n"
                      "    if (K == __TIME__[7] + __DATE__[5] + __TIMESTAMP__[18]) acc = 0.0f;")


@needs_nvcc
@pytest.mark.timeout(300)
def test_a_build_reads_one_fixed_date(cfg, tmp_path):
    import dataclasses
    from cudal2.harness.build import build
    first = build(DATED, dataclasses.replace(cfg.build, cache_dir=str(tmp_path / "a")))
    time.sleep(1.1)   # __TIME__ moves
    again = build(DATED, dataclasses.replace(cfg.build, cache_dir=str(tmp_path / "b")))
    assert first.ok and again.ok and first.device_sha256 == again.device_sha256


@pytest.fixture
def one_entry_lib(tmp_path):
    from cudal2.library import manifest
    root = KERNELS.parent.parent / "kernels_out" / "sm90"
    e = [e for e in manifest.read(root) if e.family == "sm80" and e.wins(0.0)][0]
    shutil.copy(root / e.source, tmp_path / e.source)
    shutil.copy(root / e.binary, tmp_path / e.binary)
    manifest.write(tmp_path, [e])
    return tmp_path


@needs_nvcc
@pytest.mark.timeout(600)
def test_a_rebuilt_binary_other_than_the_judged_one_is_not_served(one_entry_lib, tmp_path_factory):
    import dataclasses
    from cudal2.config import BuildConfig
    from cudal2.library import manifest
    from cudal2.library.rebuild import rebuild
    (e,) = manifest.read(one_entry_lib)
    # the judged binary is lost, and the recorded hash is not what this toolkit builds
    (one_entry_lib / e.binary).write_bytes(b"corrupt")
    manifest.write(one_entry_lib, [dataclasses.replace(e, device_sha256="0" * 64)])
    report = rebuild(one_entry_lib, BuildConfig(cache_dir=str(tmp_path_factory.mktemp("cache"))), None)
    assert report["changed"] == [e.id]
    (r,) = manifest.read(one_entry_lib)
    assert not r.wins(0.0) and r.speedups() == {}
    assert r.measured["before_rebuild"]["device_sha256"] == "0" * 64
    assert r.measured["before_rebuild"].get("speedup") == e.measured.get("speedup")


@needs_nvcc
@pytest.mark.timeout(600)
def test_an_intact_judged_binary_is_kept_when_this_toolkit_builds_another(one_entry_lib, tmp_path_factory):
    import dataclasses
    from cudal2.config import BuildConfig
    from cudal2.library import manifest
    from cudal2.library.rebuild import rebuild
    (e,) = manifest.read(one_entry_lib)
    before = (one_entry_lib / e.binary).read_bytes()
    other = dataclasses.replace(e, build={**e.build, "flags": ["-O1", "-std=c++17"]})   # ptxas -O1: other code
    manifest.write(one_entry_lib, [other])
    report = rebuild(one_entry_lib, BuildConfig(cache_dir=str(tmp_path_factory.mktemp("cache"))), None)
    assert report["kept"] == [e.id] and not report["changed"]
    (r,) = manifest.read(one_entry_lib)
    assert (one_entry_lib / r.binary).read_bytes() == before and r.wins(0.0)


@needs_nvcc
@pytest.mark.timeout(300)
def test_the_date_bomb_builds_the_same_kernel_whatever_the_clock(cfg, tmp_path):
    import dataclasses
    from cudal2.harness.build import build
    src = (BAD / "zz44_build_date_bomb.cu").read_text()
    r = build(src, dataclasses.replace(cfg.build, cache_dir=str(tmp_path / "a")))
    twin = src.replace("kBuildYear >= 2027", "1970 >= 2027")   # the kernel the fixed date gives
    assert r.ok and r.device_sha256 == build(twin, dataclasses.replace(cfg.build, cache_dir=str(tmp_path / "b"))).device_sha256
