"""Where does a persistent sm90raw kernel spend its time? A per-unit timeline from %globaltimer.

  python eval/timeline_probe.py --shape 4096,4096,4096 --point NAME='{"SCHED": "hybrid", ...}' ... --out F.json

For each point: render it at the shape, add timestamps to a copy of the source (thread 0 of each
consumer warpgroup writes %globaltimer at the start of every unit, after its mainloop, when its
epilogue starts and when it leaves the loop, into a __device__ array), compile that copy with nvcc,
launch it through the harness's own loader (`cudal2.harness.module.Module`) on Gaussian inputs,
check C against torch, and read the array back after the last of several back-to-back calls.
Each point is also timed uninstrumented (events around back-to-back calls, median of rounds, the
same way for every point in one process) so the instrumentation's own cost shows, and so is
F.linear at each shape. These per-call times launch from Python (ctypes): below ~60 us a call
they measure the host, not the kernel.

Prints per point: the kernel's span, each unit kind's (whole tile / stream-K tail / middle / head)
median mainloop time per k tile, the owner's wait for the later segments' partials, epilogue
times, and how late each CTA finishes against the first to finish.

Guarantees: the instrumented kernel's C is compared with torch's (the run stops on a mismatch);
every driver return code is checked. Does not: judge the kernel (a probe, not a candidate), or
time anything but the last call's single timeline (rerun for spread).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudal2.harness import driver  # noqa: E402
from cudal2.harness.launch import parse  # noqa: E402
from cudal2.harness.module import Module  # noqa: E402
from cudal2.kernels.family import Limits  # noqa: E402
from cudal2.kernels.sm90raw import Sm90Raw  # noqa: E402
from cudal2.library.product_bench import TorchClock, many  # noqa: E402
from cudal2.problem import parse_mnk  # noqa: E402

UNITS = 12          # timeline slots per consumer (units past this are not recorded)
EVENTS = 4          # per unit: start, mainloop end, epilogue start, (kt count | sk << 32);
                    # slot UNITS: end of the unit loop, kernel entry, end of setup, exit
TL_DECL = f"""
__device__ unsigned long long cudal2_tl[132 * 2 * ({UNITS} + 1) * {EVENTS}];
__device__ __forceinline__ unsigned long long cudal2_now() {{
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}}
#define TL_AT(slot, ev, val) do {{ if (tid == 0 && (slot) <= {UNITS}) \\
    cudal2_tl[((blockIdx.x * 2 + c) * ({UNITS} + 1) + (slot)) * {EVENTS} + (ev)] = (val); }} while (0)
#define TL(ev) TL_AT(tl_u - 1, ev, cudal2_now())
"""


def instrument(src: str) -> str:
    """The source with timestamps at the consumer's unit boundaries (anchors of the rendered template)."""
    head, sep, body = src.partition("// ================= consumer warpgroups =================")
    if not sep:
        raise SystemExit("no consumer section in the render")
    head = head.replace("// ---- the kernel ---", TL_DECL + "\n// ---- the kernel ---", 1)
    # kernel entry (event 1) and the end of the setup, barriers initialised (event 2), by thread 0
    entry = f"cudal2_tl[(blockIdx.x * 2 * ({UNITS} + 1) + {UNITS}) * {EVENTS} + "
    head = head.replace("    extern __shared__ __align__(1024) unsigned char smem_raw[];\n",
                        "    extern __shared__ __align__(1024) unsigned char smem_raw[];\n"
                        f"    if (threadIdx.x == 0) {entry}1] = cudal2_now();\n", 1)
    for sync in ("    cluster_sync();                                             // both CTAs' barriers",
                 "    __syncthreads();\n\n    if (wg == 0) {"):
        if sync in head:
            head = head.replace(sync, f"    if (threadIdx.x == 0) {entry}2] = cudal2_now();\n" + sync, 1)
            break
    body = body.replace("        int stage = 0;\n", "        int stage = 0;\n        int tl_u = 0;\n", 1)
    # unit start: after the unit's tile is known
    m = re.search(r"\n( +)(unit_of\(.*?\);|item_of\(t, im, tn\);)\n", body)
    if not m:
        raise SystemExit("no unit loop anchor")
    sk = "(unsigned long long)(unsigned)sk << 32" if "kt1, sk)" in m.group(2) else "0xffffffffull << 32"
    # k tiles of the unit: a split's range, the rank's slice under KSPLIT, else the whole item
    kts = ("(unsigned long long)(kt1 - kt0)" if "unit_of" in m.group(2) else
           "(unsigned long long)(kt_hi - kt_lo)" if "kt_hi" in body else "(unsigned long long)KTILES")
    body = body.replace(m.group(0), f"{m.group(0)}{m.group(1)}++tl_u; TL(0); TL_AT(tl_u - 1, 3, {kts} | ({sk}));\n", 1)
    body = body.replace("            wgmma_wait<0>();\n            fence_acc(acc);\n",
                        "            wgmma_wait<0>();\n            fence_acc(acc);\n            TL(1);\n", 1)
    body = body.replace("if (tid == 0) flag_release(flags + slot * CONSUMERS + c);",
                        "if (tid == 0) flag_release(flags + slot * CONSUMERS + c);\n                TL(2);", 1)
    for anchor in ("            // ---- epilogue: stmatrix", "            // ---- epilogue: fp32 -> fp16"):
        body = body.replace(anchor, "            TL(2);\n" + anchor, 1)
    end = f"        TL_AT({UNITS}, 0, cudal2_now());\n"
    last = "        // The last stores must be complete"
    if last in body:                                    # EPI=tma: before the last stores' wait
        body = body.replace(last, end + last, 1)
    else:                                               # EPI=direct: where the unit loop closes
        body = body.replace("\n        }\n    }\n}\n", "\n        }\n" + end + "    }\n}\n", 1)
    if f"TL_AT({UNITS}, 0" not in body:
        raise SystemExit("no anchor for the end of the consumer loop")
    # exit (event 3): after the last TMA stores completed, where there are any
    wait = '        if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");\n'
    body = body.replace(wait, wait + f"        TL_AT({UNITS}, 3, cudal2_now());\n", 1)
    missing = [ev for ev in ("TL(0)", "TL(1)", "TL(2)") if ev not in body]
    if missing:
        raise SystemExit(f"instrumentation anchors missing for {', '.join(missing)}")
    return head + sep + body


def compile_cubin(src: str, tmp: Path) -> bytes:
    (tmp / "k.cu").write_text(src)
    r = subprocess.run(["nvcc", "-cubin", "-arch=sm_90a", "-O3", "-o", str(tmp / "k.cubin"), str(tmp / "k.cu")],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"nvcc failed: {r.stderr[-2000:]}")
    return (tmp / "k.cubin").read_bytes()


def read_global(mod: Module, name: str, nbytes: int) -> bytes:
    cu = driver.lib()
    ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
    cu.cuModuleGetGlobal_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t),
                                        ctypes.c_void_p, ctypes.c_char_p]
    driver.check(cu.cuModuleGetGlobal_v2(ctypes.byref(ptr), ctypes.byref(size), mod._mod, name.encode()), name)
    buf = ctypes.create_string_buffer(nbytes)
    cu.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
    driver.check(cu.cuMemcpyDtoH_v2(buf, ptr, nbytes), "cuMemcpyDtoH")
    return buf.raw


def per_call_us(torch, call, calls: int, rounds: int) -> float:
    """Median over `rounds` of the per-call us of `calls` back-to-back calls, timed with events on
    torch's current stream (the product bench's clock), after 5 untimed calls."""
    clock = TorchClock(torch, flush=None)
    many(call, 5)
    return statistics.median(clock.time(lambda: many(call, calls)) for _ in range(rounds)) * 1e3 / calls


def agrees(c, ref) -> tuple[bool, float]:
    """Whether C is within a K-scaled bound of torch's result (a probe's sanity check, not the
    judge's), and the largest difference."""
    err = (c.float() - ref.float()).abs().max().item()
    return err <= 0.05 * ref.float().abs().max().item() ** 0.5 + 0.5, err


def render_point(name: str, params: dict, p) -> tuple[dict, str]:
    """The sm90raw point completed, and its render at `p`; stops the probe if it is invalid there."""
    fam = Sm90Raw()
    full = fam.complete(params)
    why = fam.invalid(full, p, Limits())
    if why:
        raise SystemExit(f"{name}: {why}")
    return full, fam.render(full, p)


def run_point(name: str, params: dict, p, torch, calls: int, rounds: int) -> dict:
    full, src = render_point(name, params, p)
    spec = parse(src)
    a = torch.randn(p.M, p.K, device="cuda", dtype=torch.float16)
    b = torch.randn(p.N, p.K, device="cuda", dtype=torch.float16)
    c = torch.empty(p.M, p.N, device="cuda", dtype=torch.float16)
    ref = torch.nn.functional.linear(a, b)
    out = {"point": name, "params": full}
    with tempfile.TemporaryDirectory() as tmp:
        for label, text in (("plain", src), ("instrumented", instrument(src))):
            mod = Module(compile_cubin(text, Path(tmp)), spec)
            wsb = mod.workspace_bytes(p.M, p.N, p.K)
            ws = torch.empty(max(wsb, 16), device="cuda", dtype=torch.uint8)
            stream = torch.cuda.current_stream().cuda_stream

            def call():
                rc = mod.call(a.data_ptr(), b.data_ptr(), c.data_ptr(), p.M, p.N, p.K, ws.data_ptr(), wsb, stream)
                if rc:
                    raise SystemExit(f"{name} {label}: launch failed ({driver.error_name(rc)})")
            call()
            torch.cuda.synchronize()
            ok, err = agrees(c, ref)
            if not ok:
                raise SystemExit(f"{name} {label}: C differs from torch by {err}")
            out[f"{label}_us"] = per_call_us(torch, call, calls, rounds)
            if label == "instrumented":
                n = 132 * 2 * (UNITS + 1) * EVENTS
                raw = read_global(mod, "cudal2_tl", 8 * n)
                out["timeline"] = list(memoryview(raw).cast("Q"))
            mod.close()
    out["max_abs_err"] = err
    return out


def time_vendor(p, torch, calls: int, rounds: int) -> float:
    """F.linear's per-call time, timed as the points' plain runs are (back-to-back calls, events)."""
    a = torch.randn(p.M, p.K, device="cuda", dtype=torch.float16)
    b = torch.randn(p.N, p.K, device="cuda", dtype=torch.float16)
    return per_call_us(torch, lambda: torch.nn.functional.linear(a, b), calls, rounds)


def summarize(rec: dict) -> dict:
    tl = rec["timeline"]
    per = (UNITS + 1) * EVENTS
    rows = []
    for cta in range(132):
        for c in range(2):
            base = (cta * 2 + c) * per
            end = tl[base + UNITS * EVENTS]
            if end == 0:
                continue
            units = []
            for u in range(UNITS):
                t0, t1, t2, info = tl[base + u * EVENTS: base + u * EVENTS + 4]
                if t0 == 0:
                    break
                kts, sk = info & 0xffffffff, info >> 32
                units.append({"t0": t0, "t1": t1, "t2": t2, "kts": kts, "sk": sk if sk != 0xffffffff else -1})
            rows.append({"cta": cta, "c": c, "end": end, "units": units})
    if not rows:
        return {"error": "no consumer recorded its end"}
    t_min = min(u["t0"] for r in rows for u in r["units"])
    kinds: dict[str, list] = {}
    waits, epis = [], []
    for r in rows:
        us = r["units"]
        for i, u in enumerate(us):
            nxt = us[i + 1]["t0"] if i + 1 < len(us) else r["end"]
            kind = "tile" if u["sk"] < 0 else "sk"
            kinds.setdefault(kind, []).append((u["t1"] - u["t0"]) / max(1, u["kts"]))
            if u["t2"]:
                waits.append((kind, u["t2"] - u["t1"]))
                epis.append((kind, nxt - u["t2"]))
    ends = sorted(r["end"] - t_min for r in rows)
    base = lambda cta, c: (cta * 2 + c) * per + UNITS * EVENTS      # noqa: E731
    entries = [tl[base(cta, 0) + 1] for cta in range(132) if tl[base(cta, 0) + 1]]
    setups = [tl[base(cta, 0) + 2] - tl[base(cta, 0) + 1] for cta in range(132) if tl[base(cta, 0) + 2]]
    exits = [tl[base(r["cta"], r["c"]) + 3] for r in rows if tl[base(r["cta"], r["c"]) + 3]]
    sk_start = sorted(u["t0"] - t_min for r in rows for u in r["units"] if u["sk"] >= 0)

    def med(xs):
        return round(statistics.median(xs) / 1e3, 3) if xs else None
    return {
        "span_us": round(ends[-1] / 1e3, 2),
        "first_end_us": round(ends[0] / 1e3, 2),
        "median_end_us": med(ends),
        "first_sk_start_us": round(sk_start[0] / 1e3, 2) if sk_start else None,
        "median_sk_start_us": med(sk_start),
        "us_per_ktile": {k: med(v) for k, v in kinds.items()},
        "ktile_p90_us": {k: round(sorted(v)[int(0.9 * len(v))] / 1e3, 3) for k, v in kinds.items()},
        "wait_us": {k: med([w for kk, w in waits if kk == k]) for k in kinds},
        "epilogue_us": {k: med([e for kk, e in epis if kk == k]) for k in kinds},
        "units_per_consumer": statistics.median(len(r["units"]) for r in rows),
        "entry_to_first_unit_us": round((t_min - min(entries)) / 1e3, 2) if entries else None,
        "entry_spread_us": round((max(entries) - min(entries)) / 1e3, 2) if entries else None,
        "setup_median_us": med(setups),
        "kernel_span_us": round((max(exits) - min(entries)) / 1e3, 2) if exits and entries else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", action="append", required=True, help="M,N,K (repeatable)")
    ap.add_argument("--point", action="append", required=True, help="NAME=JSON params (repeatable)")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out")
    ap.add_argument("--raw", action="store_true", help="keep the raw timelines in --out")
    a = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("timeline_probe: no CUDA device")
    torch.manual_seed(0)
    results = []
    for shape in a.shape:
        p = parse_mnk(shape)
        vendor_us = time_vendor(p, torch, a.calls, a.rounds)
        print(f"{p} F.linear: {vendor_us:.1f} us a call", flush=True)
        results.append({"shape": [p.M, p.N, p.K], "point": "F.linear", "plain_us": vendor_us})
        for spec in a.point:
            name, _, js = spec.partition("=")
            rec = run_point(name, json.loads(js), p, torch, a.calls, a.rounds)
            rec["shape"] = [p.M, p.N, p.K]
            rec["summary"] = summarize(rec)
            if not a.raw:
                rec.pop("timeline")
            print(f"{p} {name}: plain {rec['plain_us']:.1f} us, instrumented {rec['instrumented_us']:.1f} us, "
                  f"{json.dumps(rec['summary'])}", flush=True)
            results.append(rec)
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
