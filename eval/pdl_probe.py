"""Would programmatic dependent launch hide the gap between back-to-back GEMM calls? A probe.

  python eval/pdl_probe.py --shape 128,28672,8192 --shape 4096,4096,4096 --point '{"BM": 128, ...}' --out F.json

eval/timeline_probe.py found 6-7 us between one call's last CTA exit and the next call's first
CTA entry, on our side and the vendor's. With programmatic dependent launch the next grid may be
launched, and run its setup, while the one before it drains: its CTAs execute `griddepcontrol.wait`
before their first global access (which returns once the grid before has completed and its memory
is visible), and `griddepcontrol.launch_dependents` lets the grid after them start early.

For each shape: F.linear, then one sm90raw point (whole tiles; one launch) three ways: as rendered;
with the two griddepcontrol instructions added after the setup (launched normally: the wait is a
no-op); and that copy launched with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, which
the probe adds to the harness loader's launches (`Module.launch`) by wrapping cuLaunchKernelEx.
Each is timed eager (events around back-to-back calls) and as a CUDA graph of the same calls
(captured once per round, replayed after an untimed replay), medians of rounds, in one process.
Correctness under PDL: before the timing, each variant's C is compared with torch's where a torch
kernel rewrote A right before the call (the wait must order the GEMM's loads after that write).

Guarantees: every driver return code is checked; inputs are Gaussian. Does not: judge the kernel,
or say anything about a real model's layers, where the kernel before a GEMM is torch's (launched
without the attribute, so only a GEMM after one of ours could start early).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cudal2.harness import driver  # noqa: E402
from cudal2.harness.launch import parse  # noqa: E402
from cudal2.harness.module import Module  # noqa: E402
from cudal2.library.product_bench import TorchClock, many  # noqa: E402
from cudal2.problem import parse_mnk  # noqa: E402
from timeline_probe import agrees, compile_cubin, per_call_us, render_point  # noqa: E402

ATTR_PDL = 6            # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
SETUP_END = "\n    if (wg == 0) {\n        // ================= producer warpgroup"
GRIDDEP = ('\n    // PDL probe: every global access of this grid comes after the grid before it\n'
           '    asm volatile("griddepcontrol.wait;" ::: "memory");\n'
           '    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");\n')


def with_griddepcontrol(src: str) -> str:
    if src.count(SETUP_END) != 1:
        raise SystemExit("pdl_probe: no end-of-setup anchor in the render")
    return src.replace(SETUP_END, GRIDDEP + SETUP_END, 1)


class PdlLaunches:
    """While on, every cuLaunchKernelEx of the loader also carries the PDL attribute (after any
    cluster dimension the loader set)."""

    def __init__(self):
        self.on = False
        cu = driver.lib()
        self._real = cu.cuLaunchKernelEx

        def launch(config_ref, fn, params, extra):
            if self.on:
                cfg = config_ref._obj
                attrs = (driver.LaunchAttr * (cfg.numAttrs + 1))()
                for i in range(cfg.numAttrs):
                    attrs[i] = cfg.attrs[i]
                attrs[cfg.numAttrs].id = ATTR_PDL
                ctypes.memmove(ctypes.addressof(attrs[cfg.numAttrs].value), (ctypes.c_int * 1)(1), 4)
                cfg.attrs = ctypes.cast(attrs, ctypes.POINTER(driver.LaunchAttr))
                cfg.numAttrs += 1
                return self._real(config_ref, fn, params, extra)
            return self._real(config_ref, fn, params, extra)
        cu.cuLaunchKernelEx = launch


def timed(torch, work, calls: int, rounds: int) -> dict:
    """Per-call us of `work` (one call), eager and as a graph of `calls` calls (captured afresh each
    round, replayed once untimed: the product bench's clock), medians of rounds."""
    eager = per_call_us(torch, work, calls, rounds)
    clock = TorchClock(torch, flush=None)
    try:
        graph = [clock.time(clock.graph(lambda: many(work, calls))) * 1e3 / calls for _ in range(rounds)]
    except RuntimeError as err:   # a launch the capture refuses: recorded, not fatal
        torch.cuda.synchronize()
        return {"eager_us": eager, "graph_us": None, "graph_error": str(err).splitlines()[0]}
    return {"eager_us": eager, "graph_us": statistics.median(graph)}


def run_shape(p, params: dict, torch, pdl: PdlLaunches, calls: int, rounds: int) -> list[dict]:
    full, src = render_point("pdl_probe", params, p)
    if full["SCHED"] != "tiles" or full["SPLIT_K"] != 1:
        raise SystemExit(f"pdl_probe: a one-launch whole-tile point is needed here: {full}")
    spec = parse(src)
    a = torch.randn(p.M, p.K, device="cuda", dtype=torch.float16)
    a2 = torch.randn_like(a)
    b = torch.randn(p.N, p.K, device="cuda", dtype=torch.float16)
    c = torch.empty(p.M, p.N, device="cuda", dtype=torch.float16)
    ref2 = torch.nn.functional.linear(a2, b)
    rows = [{"shape": [p.M, p.N, p.K], "variant": "F.linear",
             **timed(torch, lambda: torch.nn.functional.linear(a, b), calls, rounds)}]
    with tempfile.TemporaryDirectory() as tmp:
        mods = {"plain": Module(compile_cubin(src, Path(tmp)), spec),
                "griddep": Module(compile_cubin(with_griddepcontrol(src), Path(tmp)), spec)}
        for variant, mod, on in (("plain", mods["plain"], False), ("griddep", mods["griddep"], False),
                                 ("griddep+pdl", mods["griddep"], True)):
            def call():
                pdl.on = on
                try:
                    # the current stream at each call: under graph capture it is the capturing one
                    rc = mod.call(a.data_ptr(), b.data_ptr(), c.data_ptr(), p.M, p.N, p.K, 0, 0,
                                  torch.cuda.current_stream().cuda_stream)
                finally:
                    pdl.on = False
                if rc:
                    raise SystemExit(f"pdl_probe: {variant} launch failed ({driver.error_name(rc)})")
            # correctness: A rewritten by a torch kernel right before the call
            a_keep = a.clone()
            a.copy_(a2)
            call()
            torch.cuda.synchronize()
            ok, err = agrees(c, ref2)
            a.copy_(a_keep)
            rows.append({"shape": [p.M, p.N, p.K], "variant": variant, "max_abs_err": err, "agrees": ok,
                         **timed(torch, call, calls, rounds)})
            if not ok:
                raise SystemExit(f"pdl_probe: {variant} differs from torch by {err}")
        for m in mods.values():
            m.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", action="append", required=True, help="M,N,K (repeatable)")
    ap.add_argument("--point", required=True, help="sm90raw whole-tile point, JSON")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out")
    a = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("pdl_probe: no CUDA device")
    torch.manual_seed(0)
    pdl = PdlLaunches()
    rows = []
    for shape in a.shape:
        for r in run_shape(parse_mnk(shape), json.loads(a.point), torch, pdl, a.calls, a.rounds):
            print(f"{'x'.join(map(str, r['shape']))} {r['variant']:12s} eager {r['eager_us']:8.1f} us  "
                  f"graph {r['graph_us'] or float('nan'):8.1f} us {r.get('graph_error', '')}", flush=True)
            rows.append(r)
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
