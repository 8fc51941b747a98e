"""Is the assembly game's static checker sound on the GPU? Every schedule it allows must compute the
original's bits. Run on the GPU machine; nothing is asserted: a measurement for eval/README.md.

  python eval/sass_audit.py --out FILE.json [--entries 128x64x128,64x64x64] [--walks 8] [--depth 6]

For each library entry that ships a cubin (sm80 family first, as `cudal2 sass --all` takes them;
`--entries` picks by id prefix): every single legal swap from ptxas's order, then `--walks` random
walks of `--depth` legal swaps each (seeded), each state's cubin checked bit for bit against the
original by `cudal2.sass.verify.bitwise` (a worker, fresh random inputs, the entry's own shape and
its tails) with `--trials` input sets. A state that differs, faults or hangs is a schedule the
checker should have refused: it is written out with the instructions that moved, so the rule it
breaks can be found and the checker mended.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudal2.harness.worker import Worker  # noqa: E402
from cudal2.library import Library  # noqa: E402
from cudal2.resources import resource  # noqa: E402
from cudal2.sass import verify  # noqa: E402
from cudal2.sass.game import Game  # noqa: E402


def moved(game: Game) -> list[str]:
    """The instructions away from their original position, as 'original index: text'."""
    return [f"{i} (now {p}): {game.instrs[i].text}" for p, i in enumerate(game.layout) if i != p]


def states(game: Game, walks: int, depth: int, seed: int):
    """Yield (label, orders): each single legal swap, then the random walks' end states."""
    for a in game.legal_swaps():
        game.apply(a)
        yield f"swap {a // 2}", game.orders()
        game.undo(a)
    rng = random.Random(seed)
    for w in range(walks):
        game.reset()
        for _ in range(depth):
            legal = game.legal_swaps()
            if not legal:
                break
            game.apply(rng.choice(legal))
        if game.orders():
            yield f"walk {w}", game.orders()
    game.reset()


def audit(e, folder: Path, worker, walks: int, depth: int, trials: int, seed: int) -> dict:
    data = (folder / e.binary).read_bytes()
    game = Game(data, measure=None)
    shapes = verify.verify_shapes(e)[:3]
    row = {"id": e.id, "kernel": game.kernel, "checked": 0, "bad": []}
    t0 = time.monotonic()
    for label, orders in states(game, walks, depth, seed):
        game.set_orders(orders)
        bw = verify.bitwise(data, game.cubin(), e.spec, shapes, trials=trials, worker=worker)
        row["checked"] += 1
        if not bw.ok:
            row["bad"].append({"state": label, "reason": bw.reason, "moved": moved(game),
                               "orders": {str(k): v for k, v in orders.items()}})
            worker.close()   # a faulting kernel may leave the worker's context unusable: a fresh one
            worker = Worker(job_timeout_s=verify.JOB_TIMEOUT_S)
    game.reset()
    row["seconds"] = time.monotonic() - t0
    return row, worker


def main(a) -> None:
    folder = resource("kernels_out") / a.arch
    lib = Library(folder)
    entries = [e for e in lib.entries if e.binary and e.binary.endswith(".cubin")]
    entries.sort(key=lambda e: (e.family != "sm80", e.M or 0, e.N, e.K))
    if a.entries:
        entries = [e for e in entries if any(e.id.startswith(p) for p in a.entries.split(","))]
    worker = Worker(job_timeout_s=verify.JOB_TIMEOUT_S)
    rows = []
    t0 = time.monotonic()
    try:
        for e in entries:
            if time.monotonic() - t0 > a.deadline:
                print(f"deadline: {len(entries) - len(rows)} entries not audited", flush=True)
                break
            row, worker = audit(e, folder, worker, a.walks, a.depth, a.trials, a.seed)
            rows.append(row)
            print(f"{row['id']}: {row['checked']} states, {len(row['bad'])} bad ({row['seconds']:.1f} s)", flush=True)
            for b in row["bad"]:
                print(f"  {b['state']}: {b['reason']}\n    " + "\n    ".join(b["moved"]), flush=True)
            a.out.write_text(json.dumps(rows, indent=1))
    finally:
        worker.close()
    print(f"{sum(r['checked'] for r in rows)} schedules the checker allows, over {len(rows)} entries: "
          f"{sum(len(r['bad']) for r in rows)} wrong on the GPU")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--arch", default="sm90")
    ap.add_argument("--entries", default="", help="comma-separated id prefixes (default: every cubin entry)")
    ap.add_argument("--walks", type=int, default=8)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--deadline", type=float, default=150.0, help="start no new entry after this many seconds")
    main(ap.parse_args())
