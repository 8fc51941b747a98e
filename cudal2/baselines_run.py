"""`cudal2 baselines`: vendor GEMM times over a shape list, resumable, as a pandas table.

Guarantees: each shape is timed in the GPU worker with the same timing code that judges
candidates (both modes, interleaved runners); a partial table is written after every shape to
`<out>.partial.parquet`, and a rerun skips shapes already there for the same GPU.

Does not: verify the vendor libraries' results (the judge uses cuBLAS as its error yardstick).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cudal2.config import Config
from cudal2.harness.worker import Worker
from cudal2.problem import Problem


def rows_for(p: Problem, res: dict) -> list[dict]:
    rows = []
    for mode, rs in res["times"].items():
        for runner, t in rs.items():
            rows.append({"M": p.M, "N": p.N, "K": p.K, "mode": mode, "runner": runner, "median_us": t["median_us"],
                         "p90_us": t["p90_us"], "tflops": p.flops / (t["median_us"] * 1e-6) / 1e12,
                         "floor_fraction": res["floor_us"] / t["median_us"], "gpu": res["gpu"]["name"],
                         "sm_clock_mhz": res["gpu"]["sm_clock_mhz_after"],
                         "lt_heuristic_count": res["lt"].get("heuristic_count"),
                         "lt_autotune_choice": res["lt"].get("autotune_choice")})
    return rows


def run_baselines(problems: list[Problem], cfg: Config, console: Console, gpu: str, out: Path) -> pd.DataFrame:
    partial = out.with_suffix(".partial.parquet")
    done = pd.read_parquet(partial) if partial.exists() else pd.DataFrame()
    gpu_name = gpu.split("|")[0]
    if len(done) and (done["gpu"] != gpu_name).any():
        done = pd.DataFrame()  # another GPU's numbers are not a resume point
    have = set(zip(done["M"], done["N"], done["K"])) if len(done) else set()
    frames = [done] if len(done) else []
    failed = []
    with Worker(cfg.run.gpu, cfg.run.job_timeout_s) as w, Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console) as bar:
        task = bar.add_task("baselines", total=len(problems))
        for p in problems:
            bar.update(task, description=f"baselines {p}")
            if (p.M, p.N, p.K) not in have:
                o = w.run("cudal2.harness.judge:baselines_job", p.M, p.N, p.K, cfg)
                if o.ok:
                    frames.append(pd.DataFrame(rows_for(p, o.value)))
                    pd.concat(frames, ignore_index=True).to_parquet(partial)
                else:
                    failed.append(f"{p}: {(o.error or str(o.fault)).splitlines()[0]}")
            bar.advance(task)
    for f in failed:
        console.print(f"[red]failed[/] {f}")
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return df
