"""Does one wave of the local scrub (2 blocks of 1024 threads per SM) reach every warp slot of
every SM, and does a raw-local marker ever survive `guards.scrub`? Diagnostic for a flaky GPU test
(tests/test_gpu_scrub.py::test_no_word_of_the_local_window_survives_a_scrub failed once of three
runs on the H100). Prints per trial: warp slots covered of SMs x 64, and markers found after a scrub.

  python eval/scrub_coverage.py --out FILE [--trials 30]
"""
import argparse
import json
from pathlib import Path

import cupy as cp
import numpy as np

from cudal2.harness import guards

_SRC = r"""
extern "C" __global__ void __launch_bounds__(1024, 2) cover(unsigned* slots) {
    unsigned sm, w;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(w));
    if ((threadIdx.x & 31) == 0) atomicAdd(&slots[sm * 64 + w], 1u);
}
"""


def main(out: Path, trials: int) -> None:
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    cover = cp.RawKernel(_SRC, "cover")
    window = cp.RawModule(code=(Path(__file__).parent.parent / "tests/kernels/probe/local_window.cu").read_text())
    fa = cp.zeros(2, dtype=cp.uint64)
    window.get_function("frame_addr")((1,), (32,), (fa,))
    lo = int(fa.get()[0])
    rows = []
    for t in range(trials):
        slots = cp.zeros(sms * 64, dtype=cp.uint32)
        cover((2 * sms,), (1024,), (slots,))
        covered = int((slots > 0).sum())
        found = cp.zeros(1, dtype=cp.uint64)
        key = np.uint32(0x5EED0000 + t)
        grid = (2 * sms,)
        window.get_function("write_raw")(grid, (1024,), (np.uint32(lo), np.uint32(guards.LOCAL_TOP), key))
        guards.scrub()
        window.get_function("read_raw")(grid, (1024,), (np.uint32(lo), np.uint32(guards.LOCAL_TOP), key, found))
        rows.append({"trial": t, "slots_covered": covered, "slots": sms * 64, "found_after_scrub": int(found.get()[0])})
        print(rows[-1], flush=True)
    out.write_text(json.dumps({"frame_addr": lo, "rows": rows}, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--trials", type=int, default=30)
    a = ap.parse_args()
    main(a.out, a.trials)
