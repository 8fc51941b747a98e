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

from cudal2.harness import driver
from cudal2.harness.driver import DriverError, encode_tmap
from cudal2.harness.launch import LaunchSpec, Resolved, SpecError

TMAP_BYTES = driver.TMAP_BYTES
_PTR, _INT = 8, 4


class LoadError(RuntimeError):
    """The cubin cannot be loaded or does not match its launch spec."""


def _check(rc: int, what: str) -> None:
    try:
        driver.check(rc, what)
    except DriverError as e:
        raise LoadError(str(e)) from None


def _expected_size(kind: str, spec: LaunchSpec) -> int:
    """Bytes of a parameter: a pointer for a buffer or a workspace slice, 4 for a size or an int."""
    if kind in spec.vocab.buffers or kind == "ws":
        return _PTR
    return TMAP_BYTES if kind == "tmap" else _INT


class Module:
    def __init__(self, data: bytes, spec: LaunchSpec):
        self.spec = spec
        try:
            driver.primary_context()
            self.device = driver.current_device()   # the one device its functions launch on
        except DriverError as e:
            raise LoadError(str(e)) from None
        cu = driver.lib()
        image = ctypes.create_string_buffer(data, len(data))  # alive for the call: the driver copies it
        mod = ctypes.c_void_p()
        _check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.addressof(image)), "cuModuleLoadData")
        self._mod = mod
        self._fns: dict[str, ctypes.c_void_p] = {}
        self._smem_set: dict[str, int] = {}
        self._resolved: dict[tuple[int, int, int], list[Resolved]] = {}
        try:
            for k in spec.kernels:
                if k.name in self._fns:
                    continue
                fn = ctypes.c_void_p()
                _check(cu.cuModuleGetFunction(ctypes.byref(fn), self._mod, k.name.encode()), f"kernel {k.name}")
                self._fns[k.name] = fn
            for k in spec.kernels:
                self._check_params(k.name, [a if isinstance(a, str) else next(iter(a)) for a in k.args])
            self.local_bytes = max(self._attribute(f, driver.ATTR_LOCAL_SIZE_BYTES) for f in self._fns.values())
        except LoadError:
            self.close()
            raise

    @staticmethod
    def _attribute(fn: ctypes.c_void_p, attr: int) -> int:
        v = ctypes.c_int()
        _check(driver.lib().cuFuncGetAttribute(ctypes.byref(v), attr, fn), "cuFuncGetAttribute")
        return v.value

    def _check_params(self, name: str, kinds: list[str]) -> None:
        cu = driver.lib()
        fn = self._fns[name]
        offset, size = ctypes.c_size_t(), ctypes.c_size_t()
        for i, kind in enumerate(kinds):
            if cu.cuFuncGetParamInfo(fn, i, ctypes.byref(offset), ctypes.byref(size)) != driver.CUDA_SUCCESS:
                raise LoadError(f"kernel {name} has {i} parameters, the spec passes {len(kinds)}")
            if size.value != _expected_size(kind, self.spec):
                raise LoadError(f"kernel {name}: parameter {i} is {size.value} bytes, the spec's {kind!r} is "
                                f"{_expected_size(kind, self.spec)}")
        if cu.cuFuncGetParamInfo(fn, len(kinds), ctypes.byref(offset), ctypes.byref(size)) == driver.CUDA_SUCCESS:
            raise LoadError(f"kernel {name} has more than the {len(kinds)} parameters the spec passes")

    def handle(self, name: str) -> int:
        """The CUfunction of kernel `name` as an integer (for the library's compiled dispatcher)."""
        return int(self._fns[name].value)

    def workspace_bytes(self, M: int, N: int, K: int) -> int:
        return self.spec.workspace_bytes(M, N, K)

    def resolved(self, M: int, N: int, K: int) -> list[Resolved]:
        return self.resolved_for({"M": M, "N": N, "K": K})

    def resolved_for(self, sizes: dict[str, int]) -> list[Resolved]:
        key = tuple(sizes.items())
        if key not in self._resolved:
            rs = self.spec.resolve_sizes(sizes)
            for r in rs:
                # Raised for any dynamic size: static shared memory counts against the 48 KiB default
                # too, so a launch at exactly 48 KiB of dynamic memory can already need it.
                if r.smem and self._smem_set.get(r.name, 0) < r.smem:
                    _check(driver.lib().cuFuncSetAttribute(self._fns[r.name], driver.ATTR_MAX_DYNAMIC_SHARED_SIZE,
                                                           r.smem), f"kernel {r.name}: smem {r.smem}")
                    self._smem_set[r.name] = r.smem
            self._resolved[key] = rs
        return self._resolved[key]

    def call(self, a: int, b: int, c: int, M: int, N: int, K: int, ws: int, ws_bytes: int, stream: int) -> int:
        """Enqueue one GEMM call; 0 or the first launch's CUDA error code (a bad spec for the shape: 1)."""
        return self.launch({"A": a, "B": b, "C": c}, {"M": M, "N": N, "K": K}, ws, stream)

    def launch(self, ptrs: dict[str, int], sizes: dict[str, int], ws: int, stream: int) -> int:
        """Enqueue one call of any vocabulary: `ptrs` by buffer name, `sizes` by size name; 0 or the
        first launch's CUDA error code (a spec that does not resolve for these sizes: 1)."""
        cu = driver.lib()
        try:
            launches = self.resolved_for(sizes)
        except (SpecError, LoadError):
            return 1  # cudaErrorInvalidValue: the spec does not resolve for this shape
        M, N, K = (sizes.get(x, 0) for x in "MNK")
        dims = {"A": (K, M), "B": (K, N), "C": (N, M)}
        for r in launches:
            bufs = []
            for kind, v in r.args:
                if kind in ptrs or kind == "ws":
                    bufs.append(ctypes.c_uint64(ptrs[kind] if kind != "ws" else ws + v))
                elif kind in sizes or kind == "int":
                    bufs.append(ctypes.c_int32(sizes[kind] if kind != "int" else v))
                elif kind == "tmap":
                    which, box, swizzle = v
                    try:
                        raw = encode_tmap(ptrs[which], *dims[which], box, swizzle)
                    except DriverError:
                        return 1   # no descriptor for these pointers and sizes: an invalid value
                    bufs.append((ctypes.c_char * TMAP_BYTES).from_buffer_copy(raw))
                else:
                    return 1   # a name this call does not bind (a task's buffer in a GEMM call): invalid value
            params = driver.params(bufs)
            config = driver.LaunchConfig(*r.grid, *r.block, r.smem, ctypes.c_void_p(stream))
            if r.cluster != (1, 1, 1):
                attr = driver.LaunchAttr(id=driver.LAUNCH_ATTR_CLUSTER_DIMENSION)
                attr.value.clusterDim = driver.ClusterDim(*r.cluster)
                config.attrs, config.numAttrs = ctypes.pointer(attr), 1
            err = cu.cuLaunchKernelEx(ctypes.byref(config), self._fns[r.name], params, None)
            if err != driver.CUDA_SUCCESS:
                return int(err)
        return 0

    def close(self) -> None:
        if getattr(self, "_mod", None) is not None:
            driver.lib().cuModuleUnload(self._mod)
            self._mod = None


def load(path: str, spec: dict | LaunchSpec) -> Module:
    with open(path, "rb") as f:
        data = f.read()
    return Module(data, spec if isinstance(spec, LaunchSpec) else LaunchSpec.from_dict(spec))
