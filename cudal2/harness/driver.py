"""The few CUDA driver entry points the loader (and the judge's graph snapshots) need, called
through ctypes on libcuda.

Guarantees: `lib()` opens libcuda once per process (a millisecond, where importing the generated
Python bindings costs tens of milliseconds on a call path); `check(rc, what)` turns a CUresult
into `DriverError` with the driver's own name for it; `primary_context()` makes the device's
primary context current when none is, as the runtime API would. The struct layouts are those of
cuda.h (CUDA 12 and later).

Does not: cover more of the driver than the loader calls, or pick a device other than the
current one (device 0 when no context is current).
"""

from __future__ import annotations

import ctypes

CUDA_SUCCESS = 0
ATTR_LOCAL_SIZE_BYTES = 3            # CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
ATTR_MAX_DYNAMIC_SHARED_SIZE = 8     # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
LAUNCH_ATTR_CLUSTER_DIMENSION = 4    # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
TMAP_FLOAT16 = 6                     # CU_TENSOR_MAP_DATA_TYPE_FLOAT16
TMAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
TMAP_L2_256B = 3                     # CU_TENSOR_MAP_L2_PROMOTION_L2_256B


class DriverError(RuntimeError):
    """A driver call failed."""


class ClusterDim(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


class LaunchAttrValue(ctypes.Union):
    _fields_ = [("pad", ctypes.c_char * 64), ("clusterDim", ClusterDim)]


class LaunchAttr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", LaunchAttrValue)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttr)), ("numAttrs", ctypes.c_uint)]


class KernelNodeParams(ctypes.Structure):   # CUDA_KERNEL_NODE_PARAMS_v2
    _fields_ = [("func", ctypes.c_void_p), ("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint),
                ("gridDimZ", ctypes.c_uint), ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint),
                ("blockDimZ", ctypes.c_uint), ("sharedMemBytes", ctypes.c_uint),
                ("kernelParams", ctypes.POINTER(ctypes.c_void_p)), ("extra", ctypes.c_void_p),
                ("kern", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


TMAP_BYTES = 128


_lib: ctypes.CDLL | None = None


def lib() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        try:
            _lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise DriverError(f"no CUDA driver: {e}") from None
        _lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        _lib.cuStreamIsCapturing.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        _lib.cuGraphUpload.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        _lib.cuLaunchKernelEx.argtypes = [ctypes.POINTER(LaunchConfig), ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.c_void_p]
        _lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
        _lib.cuFuncGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_void_p]
        _lib.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        _lib.cuFuncGetParamInfo.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
                                            ctypes.POINTER(ctypes.c_size_t)]
        _lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        _lib.cuModuleUnload.argtypes = [ctypes.c_void_p]
        _lib.cuStreamGetCaptureInfo_v2.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_uint64),
            ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p)),
            ctypes.POINTER(ctypes.c_size_t)]
        _lib.cuGraphNodeSetEnabled.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
        _lib.cuGraphExecKernelNodeSetParams_v2.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                           ctypes.POINTER(KernelNodeParams)]
        _lib.cuTensorMapEncodeTiled.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32),
            ctypes.POINTER(ctypes.c_uint32), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return _lib


def graph_upload(graph_exec: int, stream: int) -> None:
    """Upload an instantiated graph to the device on `stream` (cuGraphUpload): its first launch
    then costs what every later one does, without running it."""
    check(lib().cuGraphUpload(ctypes.c_void_p(graph_exec), ctypes.c_void_p(stream)), "cuGraphUpload")


def error_name(rc: int) -> str:
    name = ctypes.c_char_p()
    if lib().cuGetErrorName(ctypes.c_int(rc), ctypes.byref(name)) != CUDA_SUCCESS or not name.value:
        return f"CUDA error {rc}"
    return name.value.decode()


def check(rc: int, what: str) -> None:
    if rc != CUDA_SUCCESS:
        raise DriverError(f"{what}: {error_name(rc)}")


def primary_context() -> None:
    """Make a context current: the current one if any, else device 0's primary context."""
    cu = lib()
    check(cu.cuInit(0), "cuInit")   # a fresh process may not have touched the driver yet
    ctx = ctypes.c_void_p()
    check(cu.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    if ctx.value:
        return
    dev = ctypes.c_int()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def current_device() -> int:
    """The ordinal of the device whose context is current (a module loads into that context, and
    its functions launch only there)."""
    cu = lib()
    dev = ctypes.c_int()
    check(cu.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
    return dev.value


def capture_tail(stream: int) -> int:
    """The node that the work last enqueued on `stream` became in the graph being captured from it
    (the capture's one current dependency: a capture of one stream is a chain)."""
    status, cid, graph = ctypes.c_int(), ctypes.c_uint64(), ctypes.c_void_p()
    deps, n = ctypes.POINTER(ctypes.c_void_p)(), ctypes.c_size_t()
    check(lib().cuStreamGetCaptureInfo_v2(ctypes.c_void_p(stream), ctypes.byref(status), ctypes.byref(cid),
                                          ctypes.byref(graph), ctypes.byref(deps), ctypes.byref(n)),
          "cuStreamGetCaptureInfo")
    if status.value != 1 or n.value != 1:   # CU_STREAM_CAPTURE_STATUS_ACTIVE, one tail
        raise DriverError(f"no single tail node in the capture (status {status.value}, {n.value} tails)")
    return int(deps[0])


def params(args) -> ctypes.Array:
    """A launch's `kernelParams`: the address of each argument (ctypes values, in order, which the
    caller keeps alive while the array is used)."""
    return (ctypes.c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])


def set_kernel_node(graph_exec: int, node: int, func: int, grid: int, block: int, args: list) -> None:
    """Give a kernel node of an instantiated graph new arguments (`args`: ctypes scalars, in order)."""
    prm = KernelNodeParams(func=func, gridDimX=grid, gridDimY=1, gridDimZ=1, blockDimX=block, blockDimY=1,
                           blockDimZ=1, sharedMemBytes=0, kernelParams=params(args))
    check(lib().cuGraphExecKernelNodeSetParams_v2(ctypes.c_void_p(graph_exec), ctypes.c_void_p(node),
                                                  ctypes.byref(prm)), "cuGraphExecKernelNodeSetParams")


def set_node_enabled(graph_exec: int, node: int, on: bool) -> None:
    check(lib().cuGraphNodeSetEnabled(ctypes.c_void_p(graph_exec), ctypes.c_void_p(node), int(on)),
          "cuGraphNodeSetEnabled")


def encode_tmap(ptr: int, inner: int, outer: int, box: tuple[int, int], swizzle: int) -> bytes:
    """A 2-D fp16 TMA descriptor over a dense row-major matrix of `outer` rows of `inner` elements."""
    buf = ctypes.create_string_buffer(TMAP_BYTES + 64)
    at = (ctypes.addressof(buf) + 63) & ~63   # CUtensorMap is 64-byte aligned
    u64x2, u32x2 = ctypes.c_uint64 * 2, ctypes.c_uint32 * 2
    check(lib().cuTensorMapEncodeTiled(
        ctypes.c_void_p(at), TMAP_FLOAT16, 2, ctypes.c_void_p(ptr), u64x2(inner, outer), u64x2(inner * 2, 0),
        u32x2(*box), u32x2(1, 1), 0, TMAP_SWIZZLE[swizzle], TMAP_L2_256B, 0), "cuTensorMapEncodeTiled")
    return ctypes.string_at(at, TMAP_BYTES)
