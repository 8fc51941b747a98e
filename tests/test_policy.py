"""The static policy: each forbidden construct is rejected; honest code and look-alikes are not."""

import pytest

from cudal2.harness.policy import check, check_device_only

from .conftest import KERNELS, expected_bad

BODY = """#include <cuda_fp16.h>
__global__ void k(__half* c) {{ c[0] = __float2half(1.f); }}
extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                           void* ws, size_t wsb, cudaStream_t stream) {{
  {stmt}
  k<<<1, 1, 0, stream>>>(C);
  return (int)cudaGetLastError();
}}
"""

FORBIDDEN = {
    "sync": "cudaDeviceSynchronize();",
    "stream sync": "cudaStreamSynchronize(stream);",
    "malloc": "void* p; cudaMalloc(&p, 16);",
    "async malloc": "void* p; cudaMallocAsync(&p, 16, stream);",
    "host malloc": "void* p = malloc(16);",
    "new": "int* p = new int[4];",
    "vector": "std::vector<int> v(4);",
    "private stream": "cudaStream_t s; cudaStreamCreate(&s);",
    "per-thread stream": "k<<<1, 1, 0, cudaStreamPerThread>>>(C);",
    "legacy stream constant": "k<<<1, 1, 0, cudaStreamLegacy>>>(C);",
    "default-stream launch": "k<<<1, 1>>>(C);",
    "event": "cudaEvent_t e; cudaEventCreate(&e);",
    "graph": "cudaGraph_t g;",
    "sync memcpy": "cudaMemcpy(C, A, 2, cudaMemcpyDeviceToDevice);",
    "persisting L2": "cudaStreamAttrValue v; v.accessPolicyWindow.hitRatio = 1.f;",
    "device limit": "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20);",
    "thread": "std::thread t([]{});",
    "pthread": "pthread_t t; pthread_create(&t, nullptr, nullptr, nullptr);",
    "file": "FILE* f = fopen(\"x\", \"w\");",
    "getenv": "const char* e = getenv(\"HOME\");",
    "dlsym": "void* f = dlsym(nullptr, \"x\");",
    "driver entry point": "void* f; cudaGetDriverEntryPoint(\"cuStreamCreate\", &f, 0);",
    "driver stream": "cuStreamSynchronize(0);",
    "static state": "static const void* last = nullptr; last = A;",
    "static int": "static int calls = 0; ++calls;",
}


@pytest.mark.parametrize("name", sorted(FORBIDDEN))
def test_forbidden_construct_is_rejected(name):
    assert check(BODY.format(stmt=FORBIDDEN[name])), name


@pytest.mark.parametrize("decl", ["__device__ int counter;", "__device__ unsigned long long cache[64] = {0};",
                                  "__managed__ int flag;", "void* g_last = nullptr;", "int g_calls;"])
def test_global_mutable_state_is_rejected(decl):
    assert check(decl + "\n" + BODY.format(stmt=""))


@pytest.mark.parametrize("header", ["fstream", "thread", "unistd.h", "dlfcn.h", "cublas_v2.h"])
def test_header_outside_allow_list_is_rejected(header):
    assert [v.rule for v in check(f"#include <{header}>\n" + BODY.format(stmt=""))] == ["header"]


def test_constructor_attribute_is_rejected():
    assert check('__attribute__((constructor)) static void f() {}\n' + BODY.format(stmt=""))


@pytest.mark.parametrize("ok", [
    "// cudaDeviceSynchronize(); in a comment",
    "/* cudaMalloc */",
    'const char* s = "cudaStreamCreate";',
    "static bool configured = false; if (!configured) { configured = true; }",
    "constexpr int kTile = 128; const int n = M * 2;",
    "cudaMemsetAsync(ws, 0, wsb, stream);",
    "int new_value = 3; (void)new_value;",
])
def test_allowed_code_passes(ok):
    assert check(BODY.format(stmt=ok)) == []


def test_allowed_globals_pass():
    src = ("constexpr int BM = 128;\nconst int BN = 64;\n__constant__ float kScale[4];\n"
           "extern __shared__ char smem[];\nnamespace { __device__ __forceinline__ int f(int x) { return x; } }\n"
           + BODY.format(stmt=""))
    assert check(src) == []


@pytest.mark.parametrize("name", ["naive.cu", "wmma_tiled.cu", "splitk_workspace.cu"])
def test_honest_kernels_pass(name):
    assert check((KERNELS / "good" / name).read_text()) == []


@pytest.mark.parametrize("name", sorted(n for n, e in expected_bad().items() if e["stage"] == "policy" and e.get("contract") != "v2"))
def test_policy_class_of_the_adversarial_suite_is_rejected(name):
    assert check((KERNELS / "bad" / name).read_text())


@pytest.mark.parametrize("name", sorted(n for n, e in expected_bad().items() if e["stage"] != "policy"))
def test_runtime_class_of_the_adversarial_suite_reaches_the_runtime(name):
    """These must be caught by the judge, so the policy must not hide them from the GPU tests (a
    v2 file meets the device-only check, as in the judge)."""
    src = (KERNELS / "bad" / name).read_text()
    assert (check_device_only(src) if expected_bad()[name].get("contract") == "v2" else check(src)) == []
