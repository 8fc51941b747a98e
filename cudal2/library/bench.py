"""`cudal2 library verify` and `cudal2 library bench`: the library re-judged on this GPU.

Guarantees: every entry's shipped cubin, the binary a user's call runs (hash-checked by
`manifest.read`), goes through the build's rules on the binary and the same judge as a search
candidate (verify: the verification stages; bench: those plus both timing modes beside the
baselines, measured now, side by side, not read from the manifest), at the shapes the library
serves it at (`Entry.claim`: an M-range entry at fresh M across its whole range, whatever its
source claims); not a rebuild from source, which on another toolkit, or for a reordered (`sass`) entry,
is another binary. A failing entry is reported with its stage and reason. With `--json`, each
result is appended as soon as it is measured, so a run stopped early keeps what it measured.

Does not: change the library (a failing entry is only reported).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.progress import track

from cudal2.config import Config
from cudal2.harness.evaluate import Evaluator
from cudal2.library.runtime import Library
from cudal2.report import bench_table, plain
from cudal2.result import EvalResult


def _judge_all(lib: Library, cfg: Config, gpu: str, console: Console, time_it: bool,
               on_result: Callable[[EvalResult], None] | None = None) -> list[tuple[str, EvalResult]]:
    ev = Evaluator(cfg, gpu_name=gpu)
    out = []
    try:
        for e in track(lib.entries, description="verify" if not time_it else "bench", console=console):
            r = ev.judge_cubin(lib.folder / e.binary, e.id, e.spec, (lib.folder / e.source).read_text(), e.problem(),
                               time_it, claim=e.claim())
            out.append((e.id, r))
            if on_result:
                on_result(r)
    finally:
        ev.close()
    return out


def verify_entries(lib: Library, cfg: Config, gpu: str, console: Console) -> list[str]:
    bad = []
    for eid, r in _judge_all(lib, cfg, gpu, console, time_it=False):
        console.print(f"{'[green]ok[/]' if r.ok else '[red]FAIL[/]'} {plain(eid)}" +
                      ("" if r.ok else f" at {r.stage.value}: {plain(r.reason)}"))
        if not r.ok:
            bad.append(eid)
    console.print(f"{len(lib.entries) - len(bad)}/{len(lib.entries)} entries pass on this GPU")
    return bad


def record_bench(folder: Path, results: list[EvalResult], kind: str = "harness") -> int:
    """Record each result's speedups over vendor_default (none for a failed entry: not served) into
    the manifest (`manifest.record_bench`). `kind` says which bench measured them."""
    from cudal2.library import manifest
    return manifest.record_bench(folder, {r.name: {"kind": kind, "gpu": r.gpu.get("name"), "speedup": (
        {m: s["vendor_default"] for m, s in r.speedup.items()} if r.ok else {})} for r in results})


def bench_entries(lib: Library, cfg: Config, gpu: str, console: Console, json_out: Path | None) -> list[EvalResult]:
    if json_out:
        json_out.write_text("")

    def append(r: EvalResult) -> None:
        if json_out:
            with json_out.open("a") as f:
                f.write(r.to_json() + "\n")

    results = [r for _, r in _judge_all(lib, cfg, gpu, console, time_it=True, on_result=append)]
    for r in results:
        if not r.ok:
            console.print(f"[red]FAIL[/] {plain(r.name)} at {r.stage.value}: {plain(r.reason)}")
    console.print(bench_table(results))
    return results

