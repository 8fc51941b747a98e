"""`cudal2 library verify` and `cudal2 library bench`: the library re-judged on this GPU.

Guarantees: every entry goes through the same harness as a search candidate (verify: the
verification stages; bench: those plus both timing modes beside the baselines, measured now,
side by side, not read from the manifest); a failing entry is reported with its stage and reason.

Does not: change the library (a failing entry is only reported).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import track

from cudal2.config import Config
from cudal2.harness.evaluate import Candidate, Evaluator
from cudal2.library.runtime import Library
from cudal2.problem import Problem
from cudal2.report import bench_table
from cudal2.result import EvalResult


def _judge_all(lib: Library, cfg: Config, gpu: str, console: Console, time_it: bool) -> list[tuple[str, EvalResult]]:
    ev = Evaluator(cfg, gpu_name=gpu)
    out = []
    try:
        for e in track(lib.entries, description="verify" if not time_it else "bench", console=console):
            M = e.M if e.M is not None else e.m_range[1]
            src = (lib.folder / e.source).read_text()
            (r,) = ev.evaluate([Candidate(e.id, src)], Problem(M, e.N, e.K), reuse=False, time_it=time_it)
            out.append((e.id, r))
    finally:
        ev.close()
    return out


def verify_entries(lib: Library, cfg: Config, gpu: str, console: Console) -> list[str]:
    bad = []
    for eid, r in _judge_all(lib, cfg, gpu, console, time_it=False):
        console.print(f"{'[green]ok[/]' if r.ok else '[red]FAIL[/]'} {eid}" + ("" if r.ok else f" at {r.stage.value}: {r.reason}"))
        if not r.ok:
            bad.append(eid)
    console.print(f"{len(lib.entries) - len(bad)}/{len(lib.entries)} entries pass on this GPU")
    return bad


def bench_entries(lib: Library, cfg: Config, gpu: str, console: Console, json_out: Path | None) -> list[EvalResult]:
    results = [r for _, r in _judge_all(lib, cfg, gpu, console, time_it=True)]
    if json_out:
        json_out.write_text("\n".join(r.to_json() for r in results) + "\n")
    for r in results:
        if not r.ok:
            console.print(f"[red]FAIL[/] {r.name} at {r.stage.value}: {r.reason}")
    console.print(bench_table(results))
    return results

