"""The cuBLASLt baseline: `C = A·Bᵀ` for the kernel contract's row-major fp16 operands.

Guarantees:
- One fixed problem per `LtGemm`: A (M×K), B (N×K), C (M×N), all dense row-major fp16, fp32
  accumulation (CUBLAS_COMPUTE_32F, fp32 scale type), alpha = 1, beta = 0, D written in place
  of C. This is the same operation as `docs/kernel-contract.md`'s `cudal2_gemm`.
- `algorithms(k)` asks cuBLASLt's heuristic for up to k algorithms under the workspace limit
  given to the constructor, keeps only those whose heuristic state is CUBLAS_STATUS_SUCCESS, in
  the heuristic's order (index 0 is its top choice), and returns how many were kept.
- A call only enqueues one `cublasLtMatmul` on the caller's stream: no synchronization, no
  allocation, no host-device copy, so it can be captured into a CUDA graph. alpha and beta live
  in host memory owned by the object (host pointer mode), which cuBLASLt reads at enqueue or
  capture time.
- Any non-success cuBLASLt status is raised as `RuntimeError` naming the call.

Does not:
- time anything or pick a winner. Autotuning is the caller's job: time each algorithm number
  (ideally inside a CUDA graph, as candidates are timed) and keep the fastest.
- own or allocate memory. The caller provides the workspace (kept for the object's lifetime) and
  the A, B and C pointers, which must be device pointers aligned to 256 bytes (the contract's
  guarantee, and the alignment the heuristic assumes by default).
- check numerical results, bind a device or create a CUDA context: use it on the device and
  context current when it was built.

nvmath-python's low-level bindings (`nvmath.bindings.cublasLt`) are imported lazily, so importing
this module never fails on a machine without them; `available()` says whether they work here.
"""

from __future__ import annotations

# cuBLASLt is column-major. A row-major R×C matrix with row length ld is the column-major C×R
# matrix with the same ld, so the contract's product is computed transposed:
#   C_col (N×M, ld=N) = (B_col)ᵀ · A_col, where B_col is K×N (ld=K), used with TRANSA = T,
#   and A_col is K×M (ld=K), used with TRANSB = N.
# In cuBLASLt's naming: m = N, n = M, k = K; its "A" is our B and its "B" is our A.

_ALIGN = 256
_MAX_REQUEST = 100


def _lt():
    from nvmath.bindings import cublasLt

    return cublasLt


class LtGemm:
    """C = A·Bᵀ through cuBLASLt for row-major fp16 A (M×K), B (N×K), C (M×N); fp32 compute
    (CUBLAS_COMPUTE_32F), fp32 alpha=1 beta=0, D == C."""

    def __init__(self, M: int, N: int, K: int, workspace_ptr: int, workspace_bytes: int):
        import numpy as np
        from nvmath import CudaDataType
        from nvmath.bindings import cublas

        M, N, K = int(M), int(N), int(K)
        workspace_ptr, workspace_bytes = int(workspace_ptr), int(workspace_bytes)
        if M <= 0 or N <= 0 or K <= 0:
            raise ValueError(f"LtGemm: shape must be positive, got M={M} N={N} K={K}")
        if workspace_bytes < 0:
            raise ValueError(f"LtGemm: negative workspace_bytes {workspace_bytes}")
        if workspace_bytes > 0 and (workspace_ptr == 0 or workspace_ptr % _ALIGN):
            raise ValueError(f"LtGemm: workspace pointer {workspace_ptr:#x} is null or not "
                             f"{_ALIGN}-byte aligned")
        if workspace_bytes == 0:
            workspace_ptr = 0

        lt = _lt()
        self._np = np
        self._lt = lt
        self.M, self.N, self.K = M, N, K
        self.workspace_ptr, self.workspace_bytes = workspace_ptr, workspace_bytes

        # Host scalars read by cuBLASLt through their addresses: one-element arrays, kept alive.
        self._alpha = np.ones(1, dtype=np.float32)
        self._beta = np.zeros(1, dtype=np.float32)
        self._alpha_ptr = int(self._alpha.ctypes.data)
        self._beta_ptr = int(self._beta.ctypes.data)

        # Handles, 0 while not created; close() destroys whichever exist.
        self._handle = 0
        self._desc = 0
        self._layout_b = 0   # cuBLASLt's "A": B_col, K×N, ld=K, TRANSA=T
        self._layout_a = 0   # cuBLASLt's "B": A_col, K×M, ld=K, TRANSB=N
        self._layout_c = 0   # C and D: Cᵀ col-major, N×M, ld=N
        self._pref = 0

        self._results = None         # numpy array of matmul_heuristic_result_dtype, kept ones
        self._algo_ptrs: list[int] = []
        self.workspace_sizes: list[int] = []
        self.waves_counts: list[float] = []
        self.heuristic_returned = 0  # count cuBLASLt returned, before dropping failed states
        self.heuristic_skipped: list[tuple[int, int]] = []  # (position, state) dropped

        f16 = int(CudaDataType.CUDA_R_16F)
        f32 = int(CudaDataType.CUDA_R_32F)
        # The cuBLAS enum (68), not nvmath.ComputeType, whose COMPUTE_32F is a different enum.
        compute = int(cublas.ComputeType.COMPUTE_32F)
        try:
            self._handle = self._lt_call("create")
            self._desc = self._lt_call("matmul_desc_create", compute, f32)
            D = lt.MatmulDescAttribute
            self._set_desc(D.TRANSA, int(cublas.Operation.T))
            self._set_desc(D.TRANSB, int(cublas.Operation.N))
            self._set_desc(D.POINTER_MODE, int(lt.PointerMode.HOST))
            self._layout_b = self._lt_call("matrix_layout_create", f16, K, N, K)
            self._layout_a = self._lt_call("matrix_layout_create", f16, K, M, K)
            self._layout_c = self._lt_call("matrix_layout_create", f16, N, M, N)
            self._pref = self._lt_call("matmul_preference_create")
            self._set_pref(lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES, workspace_bytes)
        except BaseException:
            self.close()
            raise

    # -- helpers -------------------------------------------------------------------------------

    def _lt_call(self, name: str, *args):
        """Call one binding; the bindings raise cuBLASLtError on a non-success status."""
        lt = self._lt
        try:
            return getattr(lt, name)(*args)
        except lt.cuBLASLtError as e:
            status = getattr(e, "status", None)
            raise RuntimeError(f"cuBLASLt {name} failed: status {status}: {e}") from e

    def _set_desc(self, attr, value) -> None:
        # The value is copied by cuBLASLt, so a temporary buffer of the attribute's type will do.
        buf = self._np.array([value], dtype=self._lt.get_matmul_desc_attribute_dtype(int(attr)))
        self._lt_call("matmul_desc_set_attribute", self._desc, int(attr),
                      int(buf.ctypes.data), buf.nbytes)

    def _set_pref(self, attr, value) -> None:
        buf = self._np.array([value],
                             dtype=self._lt.get_matmul_preference_attribute_dtype(int(attr)))
        self._lt_call("matmul_preference_set_attribute", self._pref, int(attr),
                      int(buf.ctypes.data), buf.nbytes)

    # -- interface -----------------------------------------------------------------------------

    def algorithms(self, k: int) -> int:
        """Ask the heuristic for up to `k` (1..100) algorithms; keep the successful ones."""
        np, lt = self._np, self._lt
        k = int(k)
        if not 1 <= k <= _MAX_REQUEST:
            raise ValueError(f"LtGemm.algorithms: k must be in 1..{_MAX_REQUEST}, got {k}")
        if not self._handle:
            raise RuntimeError("LtGemm is closed")
        raw = lt.MatmulHeuristicResult(k)   # k uninitialized structs, owned by `raw`
        count = np.zeros(1, dtype=np.int32)
        self._lt_call("matmul_algo_get_heuristic", self._handle, self._desc,
                      self._layout_b, self._layout_a, self._layout_c, self._layout_c,
                      self._pref, k, int(raw.ptr), int(count.ctypes.data))
        n = int(count[0])
        if not 0 <= n <= k:
            raise RuntimeError(f"cuBLASLt heuristic returned an impossible count {n} for {k}")
        dtype = lt.matmul_heuristic_result_dtype
        # Copy the n returned structs out of the binding's buffer into an array we own.
        got = np.frombuffer(memoryview(raw), dtype=np.uint8, count=n * dtype.itemsize)
        got = got.view(dtype).copy()
        ok = got["state"] == 0   # CUBLAS_STATUS_SUCCESS
        self.heuristic_returned = n
        self.heuristic_skipped = [(i, int(got["state"][i])) for i in range(n) if not ok[i]]
        kept = np.ascontiguousarray(got[ok])
        self._results = kept
        base, step, off = int(kept.ctypes.data), dtype.itemsize, dtype.fields["algo"][1]
        self._algo_ptrs = [base + i * step + off for i in range(len(kept))]
        self.workspace_sizes = [int(x) for x in kept["workspace_size"]]
        self.waves_counts = [float(x) for x in kept["waves_count"]]
        return len(kept)

    def __len__(self) -> int:
        return len(self._algo_ptrs)

    def describe(self, algo: int = 0) -> dict:
        """Configuration of kept algorithm `algo` (for logs): cuBLASLt's algo id, tile, stages,
        split-K, reduction scheme, swizzle, custom option, plus workspace size and waves."""
        lt, np = self._lt, self._np
        ptr = self._algo_ptrs[algo]
        out: dict = {}
        A = lt.MatmulAlgoConfigAttribute
        for name, attr in (("id", A.ID), ("tile", A.TILE_ID), ("stages", A.STAGES_ID),
                           ("splitk", A.SPLITK_NUM), ("reduction", A.REDUCTION_SCHEME),
                           ("swizzle", A.CTA_SWIZZLING), ("custom", A.CUSTOM_OPTION)):
            buf = np.zeros(1, dtype=lt.get_matmul_algo_config_attribute_dtype(int(attr)))
            written = np.zeros(1, dtype=np.uint64)
            self._lt_call("matmul_algo_config_get_attribute", ptr, int(attr),
                          int(buf.ctypes.data), buf.nbytes, int(written.ctypes.data))
            out[name] = int(buf[0])
        out["workspace_size"] = self.workspace_sizes[algo]
        out["waves_count"] = self.waves_counts[algo]
        return out

    def __call__(self, a_ptr: int, b_ptr: int, c_ptr: int, stream_ptr: int, algo: int = 0) -> None:
        """Enqueue C = A·Bᵀ with kept algorithm number `algo` on `stream_ptr`."""
        ptrs = self._algo_ptrs
        if not ptrs:
            raise RuntimeError("LtGemm: no algorithms; call algorithms(k) first "
                               "(or the heuristic found none)")
        if not 0 <= algo < len(ptrs):
            raise IndexError(f"LtGemm: algorithm {algo} out of range 0..{len(ptrs) - 1}")
        if not a_ptr or not b_ptr or not c_ptr or (a_ptr | b_ptr | c_ptr) % _ALIGN:
            raise ValueError(f"LtGemm: A/B/C pointers must be non-null and {_ALIGN}-byte aligned")
        if self.workspace_sizes[algo] > self.workspace_bytes:   # cannot happen; cheap guard
            raise RuntimeError("LtGemm: algorithm needs more workspace than was given")
        try:
            self._lt.matmul(self._handle, self._desc,
                            self._alpha_ptr, b_ptr, self._layout_b, a_ptr, self._layout_a,
                            self._beta_ptr, c_ptr, self._layout_c, c_ptr, self._layout_c,
                            ptrs[algo], self.workspace_ptr, self.workspace_bytes,
                            int(stream_ptr))
        except self._lt.cuBLASLtError as e:
            status = getattr(e, "status", None)
            raise RuntimeError(f"cuBLASLt matmul failed (algo {algo}): status {status}: {e}") from e

    def close(self) -> None:
        """Destroy the preference, layouts, descriptor and handle. Idempotent. Work already
        enqueued must have finished (or the caller must not care) before the handle goes."""
        lt = getattr(self, "_lt", None)
        if lt is None:
            return
        errors = []
        for attr, fn in (("_pref", "matmul_preference_destroy"),
                         ("_layout_c", "matrix_layout_destroy"),
                         ("_layout_a", "matrix_layout_destroy"),
                         ("_layout_b", "matrix_layout_destroy"),
                         ("_desc", "matmul_desc_destroy"),
                         ("_handle", "destroy")):
            h = getattr(self, attr, 0)
            if h:
                setattr(self, attr, 0)
                try:
                    getattr(lt, fn)(h)
                except Exception as e:  # keep destroying the rest
                    errors.append(f"{fn}: {e}")
        self._algo_ptrs = []
        self._results = None
        if errors:
            raise RuntimeError("LtGemm.close: " + "; ".join(errors))

    def __enter__(self) -> LtGemm:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def available() -> str | None:
    """None when cuBLASLt bindings import; otherwise a one-line reason.

    Beyond the import, it loads the cuBLASLt library (cublasLtGetVersion needs no GPU, only the
    driver and the library), since the bindings import fine where neither is present.
    """
    try:
        lt = _lt()
    except Exception as e:  # ImportError, or an error raised while nvmath initializes
        return f"nvmath cuBLASLt bindings do not import: {type(e).__name__}: {e}".splitlines()[0]
    try:
        lt.get_version()
    except Exception as e:
        return f"cuBLASLt library unusable: {type(e).__name__}: {e}".splitlines()[0]
    return None
