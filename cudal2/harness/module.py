"""Load a contract v2 cubin and launch it from its spec: the one loader of device-only kernels,
used by the judge's worker and by the library alike.

Guarantees:
- `Module(cubin_bytes, spec)` loads a fresh module (`cuModuleLoadData`) in the current context,
  finds every spec kernel, checks each kernel's parameter count and sizes against the spec with
  `cuFuncGetParamInfo` (a mismatch is a `LoadError` naming the kernel and the parameter), and
  raises the dynamic shared-memory limit of every kernel launched with dynamic shared memory;
- `call(a, b, c, M, N, K, ws, ws_bytes, stream)` resolves the spec for the shape (cached per
  shape), encodes the tensor maps the spec declares over these pointers, and enqueues the
  kernels in order on `stream` with `cuLaunchKernelEx` (cluster dimensions as launch
  attributes); it returns 0, or the CUDA error code of the first launch that failed;
- `local_bytes` is the largest per-thread local frame of its kernels (the judge bounds it);
- `close()` unloads the module: nothing of one candidate outlives its judging.

Does not: run any code of the candidate's on the host (there is none: the cubin is device code),
synchronize, or allocate device memory (the caller passes the workspace).
"""

from __future__ import annotations

import ctypes
from cudal2.harness.launch import LaunchSpec, Resolved, SpecError

TMAP_BYTES = 128
_PTR, _INT = 8, 4


class LoadError(RuntimeError):
    """The cubin cannot be loaded or does not match its launch spec."""


def _cu():
    from cuda.bindings import driver
    return driver


def _check(ret, what: str):
    cu = _cu()
    err, *rest = ret if isinstance(ret, tuple) else (ret,)
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        raise LoadError(f"{what}: {name.decode() if isinstance(name, bytes) else name}")
    return rest[0] if len(rest) == 1 else rest


def _expected_size(kind: str) -> int:
    return {"A": _PTR, "B": _PTR, "C": _PTR, "ws": _PTR, "M": _INT, "N": _INT, "K": _INT, "int": _INT,
            "tmap": TMAP_BYTES}[kind]


class Module:
    def __init__(self, data: bytes, spec: LaunchSpec):
        cu = _cu()
        self.spec = spec
        _check(cu.cuInit(0), "cuInit")   # a fresh process may not have touched the driver yet
        if not int(_check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")):
            import cupy
            cupy.cuda.runtime.free(0)  # make the device's primary context current, as the runtime API does
        image = ctypes.create_string_buffer(data, len(data))  # alive for the call: the driver copies it
        self._mod = _check(cu.cuModuleLoadData(ctypes.addressof(image)), "cuModuleLoadData")
        self._fns: dict[str, object] = {}
        self._smem_set: dict[str, int] = {}
        self._resolved: dict[tuple[int, int, int], list[Resolved]] = {}
        try:
            for k in spec.kernels:
                if k.name in self._fns:
                    continue
                fn = _check(cu.cuModuleGetFunction(self._mod, k.name.encode()), f"kernel {k.name}")
                self._fns[k.name] = fn
            for k in spec.kernels:
                self._check_params(k.name, [a if isinstance(a, str) else next(iter(a)) for a in k.args])
            attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
            self.local_bytes = max(int(_check(cu.cuFuncGetAttribute(attr, f), "local size")) for f in self._fns.values())
        except LoadError:
            self.close()
            raise

    def _check_params(self, name: str, kinds: list[str]) -> None:
        cu = _cu()
        fn = self._fns[name]
        for i, kind in enumerate(kinds):
            err, _, size = cu.cuFuncGetParamInfo(fn, i)
            if err != cu.CUresult.CUDA_SUCCESS:
                raise LoadError(f"kernel {name} has {i} parameters, the spec passes {len(kinds)}")
            if size != _expected_size(kind):
                raise LoadError(f"kernel {name}: parameter {i} is {size} bytes, the spec's {kind!r} is "
                                f"{_expected_size(kind)}")
        err, _, _ = cu.cuFuncGetParamInfo(fn, len(kinds))
        if err == cu.CUresult.CUDA_SUCCESS:
            raise LoadError(f"kernel {name} has more than the {len(kinds)} parameters the spec passes")

    def handle(self, name: str) -> int:
        """The CUfunction of kernel `name` as an integer (for the library's compiled dispatcher)."""
        return int(self._fns[name])

    def workspace_bytes(self, M: int, N: int, K: int) -> int:
        return self.spec.workspace_bytes(M, N, K)

    def resolved(self, M: int, N: int, K: int) -> list[Resolved]:
        key = (M, N, K)
        if key not in self._resolved:
            rs = self.spec.resolve(M, N, K)
            for r in rs:
                # Raised for any dynamic size: static shared memory counts against the 48 KiB default
                # too, so a launch at exactly 48 KiB of dynamic memory can already need it.
                if r.smem and self._smem_set.get(r.name, 0) < r.smem:
                    cu = _cu()
                    attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                    _check(cu.cuFuncSetAttribute(self._fns[r.name], attr, r.smem), f"kernel {r.name}: smem {r.smem}")
                    self._smem_set[r.name] = r.smem
            self._resolved[key] = rs
        return self._resolved[key]

    def call(self, a: int, b: int, c: int, M: int, N: int, K: int, ws: int, ws_bytes: int, stream: int) -> int:
        """Enqueue one call; 0 or the first launch's CUDA error code (a bad spec for the shape: 1)."""
        cu = _cu()
        try:
            launches = self.resolved(M, N, K)
        except (SpecError, LoadError):
            return 1  # cudaErrorInvalidValue: the spec does not resolve for this shape
        ptrs = {"A": a, "B": b, "C": c}
        dims = {"A": (K, M), "B": (K, N), "C": (N, M)}
        for r in launches:
            bufs = []
            for kind, v in r.args:
                if kind in ("A", "B", "C", "ws"):
                    bufs.append(ctypes.c_uint64(ptrs[kind] if kind != "ws" else ws + v))
                elif kind in ("M", "N", "K", "int"):
                    bufs.append(ctypes.c_int32({"M": M, "N": N, "K": K}.get(kind, v)))
                else:
                    which, box, swizzle = v
                    raw = encode_tmap(ptrs[which], *dims[which], box, swizzle)
                    bufs.append((ctypes.c_char * TMAP_BYTES).from_buffer_copy(raw))
            params = (ctypes.c_void_p * max(1, len(bufs)))(*[ctypes.addressof(x) for x in bufs])
            config = cu.CUlaunchConfig()
            config.gridDimX, config.gridDimY, config.gridDimZ = r.grid
            config.blockDimX, config.blockDimY, config.blockDimZ = r.block
            config.sharedMemBytes = r.smem
            config.hStream = cu.CUstream(stream)
            if r.cluster != (1, 1, 1):
                attr = cu.CUlaunchAttribute()
                attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
                attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = r.cluster
                config.attrs = [attr]
                config.numAttrs = 1
            else:
                config.numAttrs = 0
            (err,) = cu.cuLaunchKernelEx(config, self._fns[r.name], ctypes.addressof(params), 0)
            if err != cu.CUresult.CUDA_SUCCESS:
                return int(err)
        return 0

    def close(self) -> None:
        if getattr(self, "_mod", None) is not None:
            _cu().cuModuleUnload(self._mod)
            self._mod = None


def encode_tmap(ptr: int, inner: int, outer: int, box: tuple[int, int], swizzle: int) -> bytes:
    """A 2-D fp16 TMA descriptor over a dense row-major matrix of `outer` rows of `inner` elements."""
    cu = _cu()
    sw = {0: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE, 32: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_32B,
          64: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_64B, 128: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B}
    tmap = _check(cu.cuTensorMapEncodeTiled(
        cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, cu.cuuint32_t(2), ptr,
        [cu.cuuint64_t(inner), cu.cuuint64_t(outer)], [cu.cuuint64_t(inner * 2)],
        [cu.cuuint32_t(box[0]), cu.cuuint32_t(box[1])], [cu.cuuint32_t(1), cu.cuuint32_t(1)],
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, sw[swizzle],
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), "cuTensorMapEncodeTiled")
    return ctypes.string_at(tmap.getPtr(), TMAP_BYTES)


def load(path: str, spec: dict | LaunchSpec) -> Module:
    with open(path, "rb") as f:
        data = f.read()
    return Module(data, spec if isinstance(spec, LaunchSpec) else LaunchSpec.from_dict(spec))
