"""The JSONL trace of LLM proposals: the dataset GRPO training reads.

Guarantees: one line per LLM completion, written when its verdict is known (a parse failure at
once, anything else after judging); every line has the same flat columns, with the variable-
shaped parts (times, metrics) as JSON strings, so `datasets.load_dataset("json", ...)` and
`pandas.read_json(lines=True)` load it without schema conflicts; lines are appended and flushed
one at a time, so a killed run loses no finished line.

Does not: compute rewards (rl/ turns the parts recorded here into rewards).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from cudal2.problem import Problem
from cudal2.result import EvalResult


def line(p: Problem, meta: dict[str, Any], candidate_id: int, parent: int | None, r: EvalResult | None,
         stage: str, reason: str, score: float | None) -> dict[str, Any]:
    compiled = stage not in ("parse", "policy", "build")
    return {
        "time": time.time(), "M": p.M, "N": p.N, "K": p.K, "model": meta.get("model", ""),
        "prompt_hash": meta.get("prompt_hash", ""), "prompt": meta.get("prompt", []),
        "completion": meta.get("completion", ""), "output_mode": meta.get("output_mode", "full"),
        "candidate_id": candidate_id, "parent_id": parent, "stage": stage, "ok": bool(r and r.ok),
        "reason": reason, "compiled": compiled, "score": score,
        "speedup_offline": (r.speedup.get("offline", {}).get("vendor_default") if r else None),
        "speedup_server": (r.speedup.get("server", {}).get("vendor_default") if r else None),
        "times_json": json.dumps({m: {k: t.median_us for k, t in rs.items()} for m, rs in r.times.items()} if r else {}),
        "ptxas_json": json.dumps(r.build.get("resources", {}) if r else {}),
        "checks_json": json.dumps(r.checks if r else {})[:20000],
    }


def append(path: str | Path, row: dict[str, Any]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()
