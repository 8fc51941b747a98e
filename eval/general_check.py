"""Stage general on the GPU: every reference solution judged by the task judge, timed against the
torch reference (its eager kernels, captured in a CUDA graph) and, for `--compile` tasks, against
`torch.compile` of it. Prints a table and writes JSON (--out). Nothing is asserted here.

  python eval/general_check.py --out DIR [--compile ID,ID,...|all] [--tasks ID,...]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from cudal2.config import Config
from cudal2.harness.task_judge import evaluate_task
from cudal2.harness.worker import Worker
from cudal2.rl import general
from cudal2.rl.general import SUITE, split

REFS = Path(general.__file__).parent / "references"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    ap.add_argument("--compile", default="", help="task ids also timed against torch.compile, or 'all'")
    ap.add_argument("--deadline", type=float, default=480, help="start no task after this many seconds")
    a = ap.parse_args()
    want = set(a.tasks.split(",")) if a.tasks else None
    comp = {t.id for t in SUITE} if a.compile == "all" else set(filter(None, a.compile.split(",")))
    cfg = Config()
    rows, t0 = [], time.monotonic()
    with Worker() as w:
        for t in SUITE:
            if want and t.id not in want:
                continue
            if time.monotonic() - t0 > a.deadline:
                rows.append({"task": t.id, "ok": None, "reason": "not run (deadline)"})
                continue
            s = time.monotonic()
            r = evaluate_task((REFS / f"{t.id}.cu").read_text(), t.id, cfg, w, with_compile=t.id in comp)
            r.update(level=t.level, split=split(t), seconds=round(time.monotonic() - s, 1))
            rows.append(r)
            sp = r.get("speedup", {})
            print(f"{t.id:24s} L{t.level} {'ok ' if r.get('ok') else 'FAIL'} "
                  f"{r.get('stage', ''):12s} vs torch x{sp.get('torch', float('nan')):.3f} "
                  f"vs compile x{sp.get('torch_compile', float('nan')):.3f}  {r.get('times_us', {}).get('candidate', 0):9.1f} us"
                  f"  {r.get('reason', '')[:90]}", flush=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "general_check.json").write_text(json.dumps(rows, indent=1))
    done = [r for r in rows if r.get("ok")]
    print(f"{len(done)}/{len(rows)} reference solutions passed")


if __name__ == "__main__":
    main()
