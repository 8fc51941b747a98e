"""Issue 13's sm_90 latency table: dependent-chain microbenchmarks on the GPU.

Each probe is one thread running a chain of CHAIN instructions, each of which reads the previous
one's result, timed with clock64 around the chain (a warm-up chain first). Cycles per link is the
result-to-use latency of that instruction class as ptxas schedules a dependent chain. Each probe's
SASS is disassembled (cuobjdump -sass) and the number of its target instructions checked, so a
probe that ptxas rewrote is reported as such rather than as a latency.

  python eval/sass_latency.py --out DIR     (on the GPU machine; writes DIR/sass_latency.json)

Nothing is asserted: the table is what `cudal2.sass.legality` may use (`max_latency`) once it has
been reviewed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path

import cupy as cp
import numpy as np

from cudal2.sass import tools

CHAIN = 256
# name -> (SASS mnemonic to count, C++ body of one link on `x` / `f`, declarations). The load probes'
# links also hold their index arithmetic (one LOP3): subtract its own row.
PROBES = {
    # (two adds per link: ptxas fuses them into one 3-input IADD3 that it cannot fold across links)
    "IADD3": ("IADD3", 'asm volatile("{.reg .u32 t; add.s32 t, %0, %1; add.s32 %0, t, %0;}" : "+r"(x) : "r"(k));', ""),
    "IMAD": ("IMAD", 'asm volatile("mad.lo.s32 %0, %0, %1, %1;" : "+r"(x) : "r"(k));', ""),
    "LOP3": ("LOP3", 'asm volatile("lop3.b32 %0, %0, %1, %0, 0x6A;" : "+r"(x) : "r"(k));', ""),
    "SHF": ("SHF", 'asm volatile("shf.l.wrap.b32 %0, %0, %0, %1;" : "+r"(x) : "r"(k));', ""),
    "FFMA": ("FFMA", 'asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(f) : "f"(g));', ""),
    "FADD": ("FADD", 'asm volatile("add.f32 %0, %0, %1;" : "+f"(f) : "f"(g));', ""),
    "HFMA2": ("HFMA2", 'asm volatile("fma.rn.f16x2 %0, %0, %1, %1;" : "+r"(x) : "r"(k));', ""),
    "MUFU.EX2": ("MUFU.EX2", 'asm volatile("ex2.approx.f32 %0, %0;" : "+f"(f));', ""),
    "MUFU.RSQ": ("MUFU.RSQ", 'asm volatile("rsqrt.approx.f32 %0, %0;" : "+f"(f));', ""),
    "LDS": ("LDS", 'x = sm[x & 255];', "__shared__ unsigned sm[256]; for (int i = 0; i < 256; ++i) sm[i] = (i + 1) & 255;"),
    "LDG.L1hit": ("LDG", 'x = __ldca(&gm[x & 255]);', ""),
    "HMMA.16816.F32": ("HMMA.16816.F32",
                       'asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, '
                       '{%8,%9}, {%0,%1,%2,%3};" : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3) : "r"(k), "r"(k), "r"(k), '
                       '"r"(k), "r"(k), "r"(k));', "float c0 = 0, c1 = 0, c2 = 0, c3 = 0;"),
}

SRC = r"""
#include <cuda_fp16.h>
extern "C" __global__ void probe(const unsigned* gm, unsigned k, float g, unsigned long long* out) {
    unsigned x = threadIdx.x + 1; float f = 1.0001f + threadIdx.x;
    DECL
    for (int rep = 0; rep < 2; ++rep) {          // rep 0 warms the instruction cache
        const unsigned long long t0 = clock64();
        #pragma unroll
        for (int i = 0; i < CHAIN; ++i) { BODY }
        const unsigned long long t1 = clock64();
        if (rep) out[0] = t1 - t0;
    }
    out[1] = x + (unsigned)f EXTRA;              // keeps the chain live
}
"""


def build(body: str, decl: str) -> str:
    extra = "+ (unsigned)(c0 + c1 + c2 + c3)" if "c0" in decl else ""
    return SRC.replace("DECL", decl).replace("BODY", body).replace("CHAIN", str(CHAIN)).replace("EXTRA", extra)


def sass_count(src: str, mnemonic: str) -> int | None:
    """How many `mnemonic` instructions ptxas emitted for the probe (None without cuobjdump)."""
    with tempfile.TemporaryDirectory() as d:
        cu, cubin = Path(d) / "p.cu", Path(d) / "p.cubin"
        cu.write_text(src)
        cuobjdump = tools.find("cuobjdump")   # PATH, or the nvidia-cuda-cuobjdump wheel
        if cuobjdump is None:
            return None
        try:
            subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-O3", "-o", str(cubin), str(cu)], check=True,
                           capture_output=True)
            sass = subprocess.run([cuobjdump, "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return None
    return len(re.findall(r"\b" + re.escape(mnemonic) + r"\b", sass))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    gm = cp.asarray((np.arange(256, dtype=np.uint32) + 1) % 256)
    out = cp.zeros(2, dtype=cp.uint64)
    table = {}
    for name, (mnemonic, body, decl) in PROBES.items():
        src = build(body, decl)
        k = cp.RawKernel(src, "probe", options=("-std=c++17",))
        k((1,), (1,), (gm, np.uint32(3), np.float32(0.999), out))
        cycles = int(out.get()[0])
        n = sass_count(src, mnemonic)
        table[name] = {"cycles_per_link": cycles / CHAIN, "sass_count": n, "chain": CHAIN,
                       "trusted": n is not None and n >= CHAIN}
        print(f"{name:16s} {cycles / CHAIN:7.2f} cycles/link  ({n} {mnemonic} in SASS for a chain of {CHAIN})")
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "sass_latency.json").write_text(json.dumps(
        {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "table": table}, indent=1))


if __name__ == "__main__":
    main()
