"""Issue 13's bar on the product path: the best schedule the agents found for each library entry,
replayed onto the shipped cubin, then

1. checked bit for bit against the shipped cubin (`verify.bitwise`, 16 trials at every shape the
   judge verifies the entry at, tails included), in a worker;
2. judged in full (`sass.run._judge`: every verification stage and the timing against the
   vendor), the reordered and the shipped cubin one after the other, in the same worker;
3. timed against the shipped cubin through the product path, in this process: two libraries, the
   shipped one and a copy whose entries carry the reordered cubins, both serving every entry,
   called through `Library.linear` (the compiled dispatcher), eager / graph / flushed, paired
   rounds (`product_bench.compare_libraries`); the outputs of the two calls are compared for
   equality there too.

Schedules come from `cudal2 sass --json` runs (the agents' `orders`); per entry the one with the
largest smaller-of-two measured gains. Nothing is published: this measures; `cudal2 sass` publishes.

  python eval/sass_product.py --out FILE.json [--top 12] greedy=A.jsonl anneal=B.jsonl ppo=C.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shutil
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def best_schedules(runs: dict[str, Path], top: int) -> list[dict]:
    """Per entry, the recorded schedule with the largest min(gain, repeat); the `top` largest."""
    best: dict[str, dict] = {}
    for agent, path in runs.items():
        for line in path.read_text().splitlines():
            r = json.loads(line) if line.strip() else {}
            a = r.get("agent") or {}
            if not a.get("orders"):
                continue
            g = min(a["gain"], a["gain_repeat"] if a.get("gain_repeat") is not None else a["gain"])
            if r["id"] not in best or g > best[r["id"]]["search_gain"]:
                best[r["id"]] = {"id": r["id"], "agent": agent, "kernel": a["kernel"], "orders": a["orders"],
                                 "displaced": a["displaced"], "search_gain": g, "search_gpu_s": r.get("gpu_s", 0.0),
                                 "search_stats": a["stats"]}
    return sorted(best.values(), key=lambda b: -b["search_gain"])[:top]


def main(out: Path, runs: dict[str, Path], top: int, library: Path, rounds: int, calls: int) -> None:
    from cudal2.cli import load_config, need_gpu
    from cudal2.harness.worker import Worker
    from cudal2.library import manifest
    from cudal2.sass import verify
    from cudal2.sass.game import replay
    from cudal2.sass.run import _judge
    from cudal2.search.score import score

    gpu = need_gpu()
    cfg = load_config(None)
    entries = {e.id: e for e in manifest.read(library)}
    picks = [p for p in best_schedules(runs, top) if p["id"] in entries]
    work = Path(tempfile.mkdtemp())
    shipped, reordered = work / "shipped", work / "reordered"
    shutil.copytree(library, shipped)
    reordered.mkdir()
    rows, new_entries = [], []
    t0 = time.monotonic()
    worker = Worker(cfg.run.gpu, cfg.run.job_timeout_s)
    try:
        for p in picks:
            e = entries[p["id"]]
            data = (library / e.binary).read_bytes()
            source = (library / e.source).read_text()
            new = replay(data, p["kernel"], p["orders"])
            bw = verify.bitwise(data, new, e.spec, verify.verify_shapes(e), trials=16, worker=worker)
            row = {**{k: p[k] for k in ("id", "agent", "kernel", "displaced", "search_gain")},
                   "bitwise": bw.ok, "bitwise_reason": bw.reason, "bitwise_shapes": bw.shapes}
            if bw.ok:
                path = work / f"{e.id}-sass.cubin"
                path.write_bytes(new)
                r_new = _judge(path, e, source, cfg, worker, gpu)
                r_old = _judge(library / e.binary, e, source, cfg, worker, gpu)
                row["judge"] = {"reordered_ok": r_new.ok, "reordered": score(r_new) if r_new.ok else None,
                                "shipped": score(r_old) if r_old.ok else None,
                                "reason": None if r_new.ok else f"{r_new.stage.value}: {r_new.reason}"}
                if r_new.ok:
                    sha = manifest.sha256_bytes(new)
                    eid = f"{e.id}-sass"
                    (reordered / f"{eid}.cubin").write_bytes(new)
                    shutil.copy(library / e.source, reordered / e.source)
                    new_entries.append(dataclasses.replace(e, id=eid, binary=f"{eid}.cubin", device_sha256=sha))
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        worker.close()
    checks_s = time.monotonic() - t0
    manifest.write(reordered, new_entries)

    import torch

    from cudal2.library import Library
    from cudal2.library import product_bench as pb
    a, b = Library(shipped, serve_margin=None), Library(reordered, serve_margin=None)
    flush = pb.flush_buffer(torch)
    t1 = time.monotonic()
    for row in rows:
        e = entries[row["id"]]
        if not (row["bitwise"] and row.get("judge", {}).get("reordered_ok")):
            continue
        M = e.M if e.M is not None else e.m_range[1]
        row["product"] = pb.compare_libraries(torch, a, b, M, e.N, e.K, rounds, calls, flush)
        print(row["id"], {m: row["product"][m] for m in ("eager", "graph", "flushed")}, flush=True)
    time_s = time.monotonic() - t1
    timed = [r for r in rows if "product" in r]
    geo = {m: math.exp(sum(math.log(r["product"][m]) for r in timed) / len(timed)) - 1 if timed else None
           for m in ("eager", "graph", "flushed")}
    picked = {p["id"]: p for p in picks}
    summary = {
        "device": gpu, "entries": len(rows), "timed": len(timed),
        "bitwise_failed": sum(not r["bitwise"] for r in rows),
        "judge_failed": sum(r["bitwise"] and not r.get("judge", {}).get("reordered_ok") for r in rows),
        "library_outputs_differ": sum(not r["product"]["bit_identical"] for r in timed),
        "geomean_gain": geo,
        "largest_gain": {m: max((r["product"][m] - 1 for r in timed), default=None) for m in ("eager", "graph", "flushed")},
        "checker": {"checked": sum(p["search_stats"]["checked"] for p in picks),
                    "rejected": sum(p["search_stats"]["rejected"] for p in picks),
                    "gpu_failed": sum(p["search_stats"]["gpu_failed"] for p in picks)},
        "gpu_min": {"search": sum(picked[r["id"]]["search_gpu_s"] for r in rows) / 60,
                    "checks_and_judge": checks_s / 60, "product_timing": time_s / 60},
        "rounds": rounds, "calls": calls, "runs": {k: str(v) for k, v in runs.items()},
    }
    out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--library", type=Path, default=REPO / "kernels_out" / "sm90")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("runs", nargs="+", help="AGENT=FILE.jsonl from `cudal2 sass --json`")
    a = ap.parse_args()
    main(a.out, {k: Path(v) for k, v in (r.split("=", 1) for r in a.runs)}, a.top, a.library, a.rounds, a.calls)
