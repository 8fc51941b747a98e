"""Figures for judge v2 (run on the GPU machine; each writes JSON to --out and prints a table).

  python eval/judge_v2.py suite [--match GLOB]   every kernel of tests/kernels: stage reached vs expected, score
  python eval/judge_v2.py separation   the cancelling trial's error ratio to cuBLAS, honest vs fp16 partials, by K
  python eval/judge_v2.py throughput   64 distinct sm80 (contract v2) renders at 1024^3: verified candidates per minute
  python eval/judge_v2.py profile      where one judging's time goes (cProfile, honest renders in-process)
  python eval/judge_v2.py snapcost     what the call-boundary snapshot nodes add to a timed replay (cuBLAS, per call)
  python eval/judge_v2.py l2probe      do lines loaded with an evict_last policy survive the judge's L2 flush?
  python eval/judge_v2.py compare --v1 DIR
        honest kernels judged by the v1 judge (the package at DIR, on the v1 renders) and by this one
        (v2 renders of the same points): are the speedups the same with the per-call guards subtracted?

Nothing is asserted here: these are measurements for the closing note and eval/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cudal2.config import Config
from cudal2.harness.evaluate import Candidate, Evaluator
from cudal2.kernels.family import Limits, get_family
from cudal2.problem import Problem
from cudal2.search.score import score

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"
LIB = ROOT / "kernels_out" / "sm90"
SHAPE = Problem(257, 136, 1032)


def cfg(**timing) -> Config:
    return Config.load(build={"cache_dir": os.environ.get("CUDAL2_CACHE") or tempfile.mkdtemp()},
                       **({"timing": timing} if timing else {}))


def suite(out: Path, match: str = "*") -> None:
    expected = json.loads((KERNELS / "bad" / "EXPECTED.json").read_text())
    rows = []
    ev = Evaluator(cfg(repeats=10, server_calls=12))
    for folder in ("good", "bad"):
        for f in sorted((KERNELS / folder).glob(f"{match}.cu")):
            want = expected.get(f.name, {"stage": "done", "contract": "v2" if f.name.endswith("_v2.cu") else "v1"})
            v2 = want.get("contract") == "v2"
            c = Candidate(f.name, f.read_text(), trust="untrusted" if v2 else "user")
            t0 = time.monotonic()
            (r,) = ev.evaluate([c], SHAPE)
            stages = want["stage"] if isinstance(want["stage"], list) else [want["stage"]]
            ok = r.stage.value in stages and (not r.ok or "done" in stages) and \
                (not r.ok or folder == "good" or (score(r) or 0) < want.get("max_speedup", 0))
            rows.append({"kernel": f"{folder}/{f.name}", "contract": "v2" if v2 else "v1", "expected": stages,
                         "stage": r.stage.value, "fault": r.fault.value if r.fault else None, "as_expected": ok,
                         "score": score(r), "reason": r.reason[:200], "seconds": round(time.monotonic() - t0, 1),
                         "open": want.get("open")})
            print(f"{'ok ' if ok else 'BAD'} {rows[-1]['kernel']:48s} {rows[-1]['contract']} {r.stage.value:12s} "
                  f"want {'/'.join(stages):24s} score {score(r) or 0:6.3f}  {r.reason[:90]}", flush=True)
            out.write_text(json.dumps(rows, indent=1))  # each row as it comes: a run cut short keeps its rows
    ev.close()
    print(f"{sum(r['as_expected'] for r in rows)}/{len(rows)} as expected")
    out.write_text(json.dumps(rows, indent=1))


SEPARATION = {"naive_v2 (fp32)": "good/naive_v2.cu", "tiled_v2 (fp32, mma)": "good/tiled_v2.cu",
              "splitk_v2 (fp32 partials)": "good/splitk_v2.cu", "fp16 partials of 16": "bad/m8_fp16_partials_16.cu",
              "fp16 partials of 32": "bad/m8_fp16_partials_32.cu"}


def separation(out: Path) -> None:
    ev = Evaluator(cfg())
    rows = []
    sm80 = get_family("sm80")
    for K in (64, 256, 1032, 4096, 16384):
        p = Problem(256, 256, K)
        cands = [Candidate(label, (KERNELS / f).read_text()) for label, f in SEPARATION.items()]
        for split in (1, 4):  # the family's own split-K path too
            pts = [x for x in sm80.valid_points(p, Limits()) if x["SPLIT_K"] == split]
            if pts:
                cands.append(Candidate(f"sm80 render, SPLIT_K={split}", sm80.render(pts[0], p)))
        for c in cands:
            (r,) = ev.evaluate([c], p, time_it=False)
            trials = r.checks.get(str(p), {}).get("gaussian", [])
            ratios = {t["dist"]: round(t["rel_ratio"], 2) for t in trials if "rel_ratio" in t}
            rows.append({"K": K, "kernel": c.name, "verdict": "pass" if r.ok else f"fail@{r.stage.value}", **ratios})
            print(f"K={K:6d} {c.name:28s} {rows[-1]['verdict']:14s} ratio to cuBLAS: {ratios}", flush=True)
    ev.close()
    print(f"bound: error_ratio = {ev.cfg.verify.error_ratio}")
    out.write_text(json.dumps(rows, indent=1))


def _throughput_run(p: Problem, cands: list[Candidate], label: str, **timing) -> dict:
    ev = Evaluator(cfg(**timing))   # an empty build cache each run
    t0 = time.monotonic()
    results = ev.evaluate(cands, p, reuse=False)
    wall = time.monotonic() - t0
    ev.close()
    stages: dict[str, int] = {}
    for r in results:
        stages[r.stage.value] = stages.get(r.stage.value, 0) + 1
    ok = sum(r.ok for r in results)
    row = {"run": label, "timing_overrides": timing, "candidates": len(cands), "verified": ok, "wall_s": wall,
           "verified_per_min": 60 * ok / wall, "stages": stages, "shape": str(p),
           "rejudged": sum("rejudge" in r.checks for r in results),
           "best_score": max((score(r) or 0) for r in results),
           "median_seconds": {k: sorted(r.checks.get("seconds", {}).get(k, 0) for r in results)[len(results) // 2]
                              for k in ("verify", "sets", "capture", "offline", "full_checks", "server")},
           "median_judge_s": sorted(r.elapsed_s - r.build.get("seconds", 0) for r in results)[len(results) // 2],
           "median_timing_sets": sorted(r.checks.get("timing_sets", 0) for r in results)[len(results) // 2]}
    print(json.dumps(row, indent=1), flush=True)
    return row


def throughput(out: Path) -> None:
    """Three runs of the same 64 renders, each with its own worker and an empty build cache: the
    first on a fresh machine (one-time costs: the harness's kernels compiled, cuBLAS and the
    cuBLASLt autotune), the second as a search sees it, the third with server mode on the offline
    sets (the judge before server mode had sets of its own)."""
    p = Problem(1024, 1024, 1024)
    fam = get_family("sm80")
    pts = sorted(fam.valid_points(p, Limits()), key=lambda x: -fam.prior(x, p, Limits()))[:64]
    cands = [Candidate("sm80-" + "-".join(map(str, x.values())), fam.render(x, p)) for x in pts]
    rows = [_throughput_run(p, cands, "first run on this machine"),
            _throughput_run(p, cands, "second run"),
            _throughput_run(p, cands, "second run, server mode on the offline sets", server_sets=512)]
    out.write_text(json.dumps(rows, indent=1))


def profile(out: Path) -> None:
    """Where one judging's wall time goes: honest sm80 renders at 1024^3 judged in this process
    (they are our own templates) under cProfile, after one judging to warm up."""
    import cProfile
    import io
    import pstats
    from cudal2.harness import judge
    from cudal2.harness.artifact import JudgeRequest
    from cudal2.harness.build import build
    p = Problem(1024, 1024, 1024)
    fam = get_family("sm80")
    c = cfg()
    pts = sorted(fam.valid_points(p, Limits()), key=lambda x: -fam.prior(x, p, Limits()))[:5]
    reqs = []
    for x in pts:
        b = build(fam.render(x, p), c.build)
        reqs.append(JudgeRequest(b.lib_path, b.kind, b.spec, p.M, p.N, p.K, c))
    judge.judge(reqs[0])
    prof = cProfile.Profile()
    t0 = time.monotonic()
    prof.enable()
    outs = [judge.judge(r) for r in reqs[1:]]
    prof.disable()
    wall = (time.monotonic() - t0) / len(outs)
    text = io.StringIO()
    st = pstats.Stats(prof, stream=text)
    st.sort_stats("tottime").print_stats(30)
    st.sort_stats("cumulative").print_stats(45)
    print(text.getvalue())
    out.write_text(json.dumps({"judge_s": wall, "ok": [o["ok"] for o in outs],
                               "seconds": [o["checks"].get("seconds") for o in outs], "pstats": text.getvalue()},
                              indent=1))


def snapcost(out: Path) -> None:
    """What the snapshot nodes cost a timed replay: cuBLAS over the judge's number of sets, its graph
    captured without snapshot nodes, with them all disabled, and with 2 and 8 armed (offline
    replays interleaved in rounds, per-call medians in microseconds)."""
    import cupy as cp
    from cudal2.harness import snapshots, timing
    from cudal2.harness.baselines import Cublas
    from cudal2.harness.judge import device
    stream = cp.cuda.Stream(non_blocking=True)
    rows = []
    with stream:
        cublas = Cublas(stream)
        for M, N, K in ((64, 64, 64), (257, 136, 1032), (1024, 1024, 1024), (4096, 4096, 4096)):
            p = Problem(M, N, K)
            n = max(2, min(512, -(-2 * device().l2_bytes // p.min_bytes)))
            A = [cp.random.standard_normal((M, K), dtype=cp.float32).astype(cp.float16) for _ in range(n)]
            B = [cp.random.standard_normal((N, K), dtype=cp.float32).astype(cp.float16) for _ in range(n)]
            C = [cp.empty((M, N), cp.float16) for _ in range(n)]
            run = lambda i: cublas.tn(A[i], B[i], C[i])  # noqa: E731
            graphs, snaps = {"none": (timing.capture(stream, run, list(range(n))), n)}, {}
            for label in ("disabled", "armed 2", "armed 8"):
                snaps[label] = snapshots.Snapshots(C, stream, n)
                graphs[label] = (timing.capture(stream, run, list(range(n)), after=snaps[label].capture), n)
            k = {"disabled": 0, "armed 2": 2, "armed 8": 8}
            before = {lb: (lambda lb=lb: snaps[lb].arm(graphs[lb][0], k[lb])) for lb in snaps}
            t = timing.offline(stream, graphs, 40, 10.0, before=before)
            row = {"shape": str(p), "sets": n, **{lb: round(x.median_us, 3) for lb, x in t.items()}}
            rows.append(row)
            print(row, flush=True)
            del A, B, C, graphs, snaps
    out.write_text(json.dumps(rows, indent=1))


COMPARE = ["64x64x64", "512x256x64", "512x512x512", "256x1024x512", "128x4096x512", "64x1024x16384",
           "12288x1024x64", "16384x64x128"]
_V1_JOB = """
import json, sys, tempfile
from cudal2.config import Config
from cudal2.harness.evaluate import Candidate, Evaluator
from cudal2.problem import Problem
jobs = json.loads(sys.stdin.read())
ev = Evaluator(Config.load(build={"cache_dir": tempfile.mkdtemp()}))
out = []
for name, src, (M, N, K) in jobs:
    (r,) = ev.evaluate([Candidate(name, src)], Problem(M, N, K), reuse=False)
    out.append({"ok": r.ok, "reason": r.reason, "speedup": r.speedup})
ev.close()
print("JSON" + json.dumps(out))
"""


def compare(out: Path, v1: Path) -> None:
    from cudal2.library import manifest
    entries = {f"{e.M}x{e.N}x{e.K}": e for e in manifest.read(LIB) if e.family == "sm80"}
    picked = [entries[s] for s in COMPARE if s in entries]
    jobs = [(e.id, (v1 / "kernels" / f"{e.extra['contract_v1_id']}.cu").read_text(), (e.M, e.N, e.K)) for e in picked]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(v1.resolve()), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-c", _V1_JOB], input=json.dumps(jobs), capture_output=True, text=True,
                         env=env, cwd=tempfile.mkdtemp())
    line = [x for x in res.stdout.splitlines() if x.startswith("JSON")]
    if not line:
        sys.exit(f"the v1 judge failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    old = json.loads(line[0][4:])
    ev = Evaluator(cfg())
    rows = []
    for e, o in zip(picked, old):
        c = Candidate.made_by(e.id, (LIB / e.source).read_text(), "template", e.family, e.params)
        (r,) = ev.evaluate([c], Problem(e.M, e.N, e.K), reuse=False)
        row = {"shape": f"{e.M}x{e.N}x{e.K}", "v2_ok": r.ok, "v1_ok": o["ok"]}
        for mode in ("offline", "server"):
            a = o["speedup"].get(mode, {}).get("vendor_default")
            b = r.speedup.get(mode, {}).get("vendor_default")
            row[f"{mode}_v1"], row[f"{mode}_v2"] = a, b
            row[f"{mode}_v2_over_v1"] = b / a if a and b else None
        rows.append(row)
        print(f"{row['shape']:>16}  offline v1 {row['offline_v1'] or 0:6.3f} v2 {row['offline_v2'] or 0:6.3f}   "
              f"server v1 {row['server_v1'] or 0:6.3f} v2 {row['server_v2'] or 0:6.3f}"
              f"  {'' if r.ok else r.reason[:80]}", flush=True)
    ev.close()
    out.write_text(json.dumps(rows, indent=1))


_L2_SRC = r"""
extern "C" __global__ void touch(const uint4* x, long long n, int evict_last, unsigned* sink) {
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    unsigned acc = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        uint4 v;
        if (evict_last)
            asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(x + i), "l"(pol));
        else
            v = x[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) sink[0] = acc;
}
"""


def l2probe(out: Path) -> None:
    """Time a plain read of a 24 MiB buffer (events, median of 25) right after reading it (hot), or
    after reading it plainly or with an evict_last policy and then flushing the L2 with
    `timing.flush_l2` (what the judge does) or with a plain write of the flush buffer (what it did):
    if evict_last lines survive a flush, the read after it is nearly as fast as the hot one."""
    import cupy as cp
    import numpy as np
    from cudal2.harness import timing
    from cudal2.harness.judge import device
    k = cp.RawKernel(_L2_SRC, "touch")
    x = cp.random.default_rng(1).integers(0, 2**31, size=(24 << 20) // 4, dtype=cp.int32)
    n = np.int64(x.size // 4)
    sink = cp.zeros(1, cp.uint32)
    flush = cp.empty(int(Config().timing.flush_l2_factor * device().l2_bytes), dtype=cp.uint8)
    grid = (132 * 16,)
    flushes = {"none": lambda: None, "fill": lambda: flush.fill(0), "flush_l2": lambda: timing.flush_l2(flush)}

    def case(evict_last: int, how: str) -> float:
        ts = []
        for _ in range(25):
            k(grid, (256,), (x, n, np.int32(evict_last), sink))
            flushes[how]()
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record()
            k(grid, (256,), (x, n, np.int32(0), sink))
            e1.record()
            e1.synchronize()
            ts.append(cp.cuda.get_elapsed_time(e0, e1) * 1e3)
        return round(float(np.median(ts)), 2)

    rows = {f"{'evict_last' if el else 'plain'}_then_{how}_us": case(el, how) for el in (0, 1) for how in flushes}
    print(json.dumps(rows, indent=1))
    out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["suite", "separation", "throughput", "compare", "l2probe", "profile", "snapcost"])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--v1", type=Path, help="compare: a folder holding the v1 judge's cudal2/ and kernels/")
    ap.add_argument("--match", default="*", help="suite: only kernels whose file name matches this glob (no .cu)")
    a = ap.parse_args()
    if a.what == "compare":
        compare(a.out, a.v1)
    elif a.what == "suite":
        suite(a.out, a.match)
    else:
        {"suite": suite, "separation": separation, "throughput": throughput, "l2probe": l2probe,
         "profile": profile, "snapcost": snapcost}[a.what](a.out)
