"""Facts about the GPU the harness runs on: name, SMs, L2, clocks, and the peaks for the floor.

Guarantees: `probe()` reads everything off the device (CUDA attributes through cupy, clocks and
driver through NVML) and never assumes an H100; the tensor peak is SMs x dense fp16 FLOP per
clock per SM x the maximum SM clock, and the bandwidth peak is memory clock x bus width x 2, so
the floor they give is a true lower bound at any clock the card can reach. `gpu_present()`
needs no CUDA context (it asks NVML) and is cheap enough for CLI start-up.

Does not: change clocks, power or any other setting of the card.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# Dense fp16 tensor-core FLOP per clock per SM with fp32 accumulation, by compute capability.
# (H100 SXM: 989 TFLOP/s = 132 SMs x 4096 x 1.83 GHz.)
FP16_FLOP_PER_CLK_SM = {(8, 0): 2048, (8, 6): 1024, (8, 9): 1024, (9, 0): 4096, (10, 0): 8192}


class NoGPU(RuntimeError):
    """No usable NVIDIA GPU on this machine; the message says why."""


@dataclass
class DeviceInfo:
    index: int
    name: str
    cc: tuple[int, int]
    sm_count: int
    l2_bytes: int
    smem_per_block_optin: int
    max_sm_clock_mhz: int
    sm_clock_mhz: int           # at probe time
    max_mem_clock_mhz: int
    bus_width_bits: int
    driver: str
    cuda_runtime: int
    peak_flops: float           # dense fp16, FLOP/s
    peak_bytes_per_s: float

    @property
    def arch(self) -> str:
        major, minor = self.cc
        return f"sm{major}{minor}"

    def to_dict(self) -> dict:
        return asdict(self)


def _nvml():
    import pynvml
    pynvml.nvmlInit()
    return pynvml


def gpu_present() -> str | None:
    """None when an NVIDIA GPU answers NVML; otherwise a one-line reason."""
    try:
        nv = _nvml()
        if nv.nvmlDeviceGetCount() == 0:
            return "no NVIDIA GPU found (NVML reports 0 devices)"
        return None
    except ImportError:
        return "nvidia-ml-py is not installed"
    except Exception as e:  # NVMLError_LibraryNotFound, DriverNotLoaded...
        return f"no NVIDIA GPU driver answered ({e})"


def probe(index: int = 0) -> DeviceInfo:
    """Read the current device; call inside the worker (it creates a CUDA context)."""
    import cupy
    from cupy.cuda import runtime

    props = runtime.getDeviceProperties(index)
    attr = lambda a: runtime.deviceGetAttribute(a, index)  # noqa: E731
    nv = _nvml()
    h = nv.nvmlDeviceGetHandleByIndex(index)
    max_sm = nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)
    max_mem = nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)
    bus = nv.nvmlDeviceGetMemoryBusWidth(h)
    cc = (props["major"], props["minor"])
    sms = props["multiProcessorCount"]
    per_clk = FP16_FLOP_PER_CLK_SM.get(cc, 4096)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return DeviceInfo(
        index=index, name=name, cc=cc, sm_count=sms, l2_bytes=props["l2CacheSize"],
        smem_per_block_optin=attr(runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin),
        max_sm_clock_mhz=max_sm, sm_clock_mhz=nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
        max_mem_clock_mhz=max_mem, bus_width_bits=bus, driver=nv.nvmlSystemGetDriverVersion(),
        cuda_runtime=cupy.cuda.runtime.runtimeGetVersion(),
        peak_flops=sms * per_clk * max_sm * 1e6,
        peak_bytes_per_s=max_mem * 1e6 * 2 * bus / 8,
    )


def sm_clock_mhz(index: int = 0) -> int:
    nv = _nvml()
    return nv.nvmlDeviceGetClockInfo(nv.nvmlDeviceGetHandleByIndex(index), nv.NVML_CLOCK_SM)
