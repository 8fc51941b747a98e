"""Contract v2 builds: device code only, checked on the binary, with reproducible hashes."""

import json
import shutil
import subprocess
import sys

import pytest

from cudal2.config import BuildConfig
from cudal2.harness.build import build
from cudal2.harness.cubin import canonical_ptx

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

SRC = """#include <cuda_fp16.h>
/* cudal2-launch {"kernels": [{"name": "add", "grid": ["cdiv(M * N, 256)"], "block": [256], "args": ["A", "B", "C", "M", "N"]}]} */
namespace { __device__ __noinline__ float twice(float x) { return 2.0f * x; } }
STATE
extern "C" __global__ void add(const __half* A, const __half* B, __half* C, int M, int N) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M * N) C[i] = __float2half(twice(__half2float(A[i])) + __half2float(B[i]) EXTRA);
}
"""


def src(state: str = "", extra: str = "") -> str:
    return SRC.replace("STATE", state).replace("EXTRA", extra)


def test_v2_builds_to_a_cubin(tmp_path):
    r = build(src(), BuildConfig(cache_dir=str(tmp_path)))
    assert r.ok, r.reason
    assert r.kind == "cubin" and r.lib_path.endswith(".cubin") and r.spec["kernels"][0]["name"] == "add"


def test_device_hash_is_the_same_in_another_folder_and_process(tmp_path):
    here = build(src(), BuildConfig(cache_dir=str(tmp_path / "a" / "deeper")))
    code = ("import json, sys; from cudal2.config import BuildConfig; from cudal2.harness.build import build; "
            "r = build(sys.stdin.read(), BuildConfig(cache_dir=sys.argv[1])); print(json.dumps([r.ok, r.device_sha256]))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "b")], input=src(), capture_output=True,
                         text=True, check=True)
    ok, sha = json.loads(out.stdout)
    assert ok and here.ok and sha == here.device_sha256


def test_writable_module_global_fails_the_build(tmp_path):
    r = build(src("__device__ float memo[64];", "+ memo[i & 63]"), BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and r.stage == "build" and ".nv.global" in r.reason


def test_device_printf_fails_the_build(tmp_path):
    r = build(src("", ") ; printf(\"%d\", i); (void)(0"), BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and "vprintf" in r.reason


def test_spec_naming_a_missing_kernel_fails_the_build(tmp_path):
    r = build(src().replace('"name": "add"', '"name": "mul"'), BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and "mul" in r.reason


def test_malformed_spec_fails_the_build_with_its_reason(tmp_path):
    r = build(src().replace('"cdiv(M * N, 256)"', '"M / 2"'), BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and r.stage == "build" and "launch spec" in r.reason


def test_host_only_header_fails_the_policy(tmp_path):
    r = build("#include <thread>\n" + src(), BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and r.stage == "policy"


def test_canonical_ptx_zeroes_the_module_id():
    ptx = ".func _ZN32_INTERNAL_0671beb9_9_kernel_cu_k34_GLOBAL__N__0671beb9_9_kernel_cu_k1fEf"
    assert canonical_ptx(ptx) == ".func _ZN32_INTERNAL_00000000_9_kernel_cu_k34_GLOBAL__N__00000000_9_kernel_cu_k1fEf"


def test_a_generic_pointer_to_constant_memory_fails_the_build(tmp_path):
    state = ('__constant__ unsigned char bank[256];\n'
             '__device__ __forceinline__ unsigned char* writable() { unsigned long long p;\n'
             '  asm volatile("cvta.const.u64 %0, bank;" : "=l"(p)); return (unsigned char*)p; }')
    r = build(src(state, "+ (float)(writable()[0]++)"), BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and r.stage == "build" and "cvta.const" in r.reason


def test_a_pointer_to_constant_memory_stored_by_an_initializer_fails_the_build(tmp_path):
    # No cvta.const in the code: nvcc writes `= generic(bank)`, and the kernel loads the pointer
    # with an inline ld.const (tests/kernels/bad/u_const_pointer_initializer.cu).
    state = ('__constant__ unsigned char bank[256];\n'
             '__constant__ unsigned char* bank_ptr = (unsigned char*)bank;\n'
             '__device__ __forceinline__ unsigned char* writable() { unsigned long long p;\n'
             '  asm volatile("ld.const.u64 %0, [bank_ptr];" : "=l"(p)); return (unsigned char*)p; }')
    r = build(src(state, "+ (float)(writable()[0]++)"), BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and r.stage == "build" and "generic(" in r.reason


def test_module_constant_data_fails_the_build(tmp_path):
    # no cvta.const, no initializer: the data alone is refused (a review wrote it through the
    # bank's generic address read from driver words, and kept state past the bank's end)
    state = '__constant__ float bias_table[4] = {0.0f, 0.0f, 0.0f, 0.0f};'
    r = build(src(state, "+ bias_table[i % 4]"), BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and r.stage == "build" and "module __constant__ data" in r.reason


def test_relocated_constant_data_is_a_cubin_violation():
    from cudal2.harness.cubin import CubinInfo, violations
    info = CubinInfo(sections=[".text.k", ".nv.constant3", ".rela.nv.constant3"], entries=["k"])
    assert any("relocated constant data" in v for v in violations(info, ["k"]))
    assert violations(CubinInfo(sections=[".text.k", ".nv.constant0.k"], entries=["k"]), ["k"]) == []


def test_an_indexed_read_of_the_parameter_bank_fails_the_build(tmp_path):
    # bad/w_cbank_header_state.cu: the constant bank's generic base, read from the parameter
    # bank's header by an ld.param through the address of a parameter plus a runtime offset
    from .conftest import KERNELS
    r = build((KERNELS / "bad" / "w_cbank_header_state.cu").read_text(), BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and r.stage == "build" and "parameter" in r.reason


def test_a_load_through_a_parameters_generic_address_fails_the_build(tmp_path):
    # the generic address of a __grid_constant__ parameter (cvta.param, which TMA kernels need),
    # then a plain load below it: the same header words
    state = ('__device__ __forceinline__ unsigned long long below(const int* p) {\n'
             '  return *(volatile const unsigned long long*)((const char*)p - 320); }')
    kernel = src(state).replace("int M, int N)", "const __grid_constant__ int M, int N)")
    kernel = kernel.replace("EXTRA", "").replace("+ __half2float(B[i])", "+ __half2float(B[i]) + (float)below(&M)")
    r = build(kernel, BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and r.stage == "build" and "parameter" in r.reason, r.reason


def test_line_info_leaves_every_statement_checked():
    # -lineinfo writes `.loc` before instructions (with inlining: `, function_name ..., inlined_at ...`)
    from cudal2.harness.cubin import statement_violations
    head = ".entry k(.param .u64 k_param_0)\n{\n"
    for loc in (".loc 1 5 1", ".loc\t1 7 3, function_name $L__info_string0, inlined_at 1 40 3"):
        assert statement_violations(head + loc + "\n\tld.param.u64 %rd1, [k_param_0];\n}") == []
        assert statement_violations(head + loc + "\n\tld.param.u64 %rd1, [k_param_0+-320];\n}")


def test_a_guard_written_with_spaces_hides_no_statement():
    # ptxas reads `@ q` and `@ !q` as guards: a pattern that wanted `@q` took the `@` for the opcode,
    # and the cvta.param behind it went unseen (fifteenth review)
    from cudal2.harness.cubin import statement_violations
    head = ".entry k(.param .u64 k_param_0)\n{\n.reg .pred q;\n.reg .b64 %rd<3>;\n"
    for guard in ("@ q", "@ !q", "@! q"):
        assert statement_violations(head + f"\t{guard} cvta.param.u64 %rd1, %rd2;\n}}"), guard


def test_parameter_rules_pass_reads_inside_a_parameter_and_tma_descriptors():
    from cudal2.harness.cubin import statement_violations
    ptx = """
.entry k(.param .align 128 .b8 k_param_0[128], .param .u64 .ptr .global .align 1 k_param_1, .param .u32 k_param_2)
{
	mov.b64 	%rd1, k_param_0;
	ld.param.u64 	%rd2, [k_param_1];
	ld.param.u32 	%r1, [k_param_2];
	ld.param.v2.u32 	{%r2, %r3}, [k_param_0+120];
	cvta.param.u64 	%rd3, %rd1;
	prefetch.tensormap [%rd3];
	cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd3, {%r5, %r6}], [%r7];
}"""
    assert statement_violations(ptx) == []
    for bad in ("ld.param.v4.u32 {%r2, %r3, %r8, %r9}, [k_param_0+120];", "ld.param.u32 %r9, [k_param_2+-208];",
                "ld.u64 %rd9, [%rd3];", "add.s64 %rd9, %rd1, 8;", "mov.u32 %r9, %envreg3;",
                "mov.u64 %rd8, 208; cvta.param.u64 %rd9, %rd8;",          # a number made a param address
                "$L__BB0_3:\n\tadd.s64\n\t%rd9,\n\t%rd3, -320;",            # operands on lines of their own
                "prefetch.tensormap [%rd3+-320];",                            # a "descriptor" below the parameters
                "ld.param.u64 %rd9, /* [k_param_1] */ [k_param_1+-320];",    # a comment naming a good operand
                "{ .reg .pred q; @q ld.weak.param.u64 %rd9, [k_param_1+-320]; }",   # a qualifier, a bare guard
                "mov.b64 %t_1, k_param_1; mov.b64 %t_1, %rd7; ld.param.u64 %rd9, [%t_1];",  # a name defined twice
                "cvta.to.param.u64 %rd9, %rd3;",                               # generic back to param space
                "add.s64 %rd3, %rd3, -320; ld.u64 %rd9, [%rd3];",              # the generic address redefined
                "ld .param.u64 %rd9, [k_param_1+-320];",                       # an opcode's parts apart
                "/* // */ ld.param.u64 %rd9, [k_param_1+-320];",               # a line comment in a block one
                '.pragma "/*"; ld.param.u64 %rd9, [k_param_1+-320]; // */',    # a block comment's start in a string
                "// .param .b8 zz[64]\n{ .reg .b64 zz; ld.param.u64 %rd9, [zz]; }",   # a register named like a param
                "{ .param .b64 a0; st.param.b64 [a0+0], %rd3; }",            # the address stored as a value
                "{ .param .b8 k_param_2[64]; } ld.param.u32 %r9, [k_param_2+4];",   # a parameter widened by a twin
                ".extern .func x (); ld.u64 %rd9, [%rd3];",                   # a declaration inside the body
                "{ ld.u64 %rd9, [%rd3];",                                      # unbalanced braces
                '.pragma "x\\"; ld.u64 %rd9, [%rd3]; .pragma "y";',             # a string ptxas ends at `\"`
                '.pragma "x\n"; ld.u64 %rd9, [%rd3]; .pragma "y";',              # a string across a newline
                ".loc 1 5 1\n\tld.u64 %rd9, [%rd3];",                          # after a line directive
                ".loc 1 5 1 ld.u64 %rd9, [%rd3];",
                '#line 5 "x"\n\tld.u64 %rd9, [%rd3];'):
        assert statement_violations(ptx.replace("prefetch.tensormap [%rd3];", bad)), bad


@pytest.mark.parametrize("name", ["x_constant_past_end.cu", "y_param_name_from_comment.cu", "y_pragma_string_comment.cu",
                                  "z_func_decl_in_body.cu", "z_string_escape_i2f_gridid.cu",
                                  "z_string_escape_nanosleep_gridid.cu", "z_newline_string_stsm_gridid.cu",
                                  "z_newline_string_imma_gridid.cu", "z_loc_hides_statement.cu"])
def test_reads_of_the_parameter_banks_driver_words_fail_the_build(tmp_path, name):
    from .conftest import KERNELS
    r = build((KERNELS / "bad" / name).read_text(), BuildConfig(cache_dir=str(tmp_path)))
    assert not r.ok and r.stage == "build"


def test_a_tma_descriptor_must_be_a_tensor_map_parameter(tmp_path):
    # review 53: an int parameter's address named as a descriptor makes the arguments after it one
    from .conftest import KERNELS
    forged = build((KERNELS / "bad" / "zz53_forged_tensor_map.cu").read_text(), BuildConfig(cache_dir=str(tmp_path)))
    honest = build((KERNELS / "good" / "tma_v2.cu").read_text(), BuildConfig(cache_dir=str(tmp_path)))
    assert not forged.ok and "tensor-map parameter" in forged.reason
    assert honest.ok, honest.reason
