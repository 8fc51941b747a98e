"""Human-readable tables of results. Every number names its unit; every table names GPU and mode.

Guarantees: pure formatting of values already measured; nothing here computes a new figure
except geometric means and counts over those values; text a candidate's bytes reach (a failure's
reason) is printed as it is (`plain`): no markup, no control character.

Does not: measure anything.
"""

from __future__ import annotations

import math
import re

import pandas as pd
from rich.markup import escape
from rich.table import Table

from cudal2.result import EvalResult


# Control characters, C1 too (U+009B is a CSI to some terminals); tab and newline stay.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: str) -> str:
    """`text` (a reason: what a compiler or a check said, quoting a candidate's bytes) for rich to
    print as written: markup escaped, each control character shown as '?'. A kernel's `#error`
    line is its build's reason verbatim: `[/x]` in it raised rich's MarkupError out of `cudal2
    eval` (a traceback after the build), and its ESC sequences (a window title, a cleared screen,
    OSC 52 writing the clipboard) reached the user's terminal (review 52)."""
    return escape(_CONTROL.sub("?", text))


def result_table(r: EvalResult) -> Table:
    gpu = r.gpu.get("name", "?")
    t = Table(title=f"{r.name} at {r.M}x{r.N}x{r.K} on {gpu}", show_lines=False)
    t.add_column("item"); t.add_column("value")
    t.add_row("verdict", "[green]PASS[/]" if r.ok else f"[red]FAIL[/] at stage {r.stage.value}")
    if not r.ok:
        t.add_row("reason", plain(r.reason))
    if r.fault:
        t.add_row("fault", r.fault.value)
    res = r.build.get("resources") or {}
    for entry, v in list(res.items())[:4]:
        t.add_row(f"ptxas {entry[:40]}", f"{v.get('registers')} regs, {v.get('smem')} B smem, "
                                          f"{v.get('spill_stores', 0)} B spill, {v.get('stack', 0)} B stack")
    for mode, rs in r.times.items():
        clock = r.gpu.get("sm_clock_mhz_after")
        t.add_row(f"[bold]{mode}[/]", f"SM clock after timing {clock} MHz")
        for runner, tm in rs.items():
            t.add_row(f"  {runner}", f"median {tm.median_us:.2f} us, p90 {tm.p90_us:.2f} us ({tm.samples} samples)")
        for b, s in r.speedup.get(mode, {}).items():
            t.add_row(f"  speedup vs {b}", f"{s:.3f}x")
        if mode in r.tflops:
            t.add_row("  candidate", f"{r.tflops[mode]:.1f} TFLOP/s, {100 * r.floor_fraction[mode]:.1f}% of the physical floor")
    for k, v in (r.profile or {}).get("summary", {}).items():
        if isinstance(v, (int, float)):
            t.add_row(f"ncu {k}", f"{v:.4g}")
    return t


def geomean(xs) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def baselines_table(df: pd.DataFrame) -> Table:
    """One row per shape and mode: each runner's median, and the best."""
    if df.empty:
        return Table(title="no baselines measured")
    gpu = df["gpu"].iloc[0]
    wide = df.pivot_table(index=["M", "N", "K", "mode"], columns="runner", values="median_us").reset_index()
    runners = [c for c in ("cublas_tn", "cublas_nn", "cublaslt", "cublaslt_autotune") if c in wide.columns]
    t = Table(title=f"vendor GEMM medians in us on {gpu} (offline: graph replay over rotating inputs; "
                    "server: L2 flush + idle gap per call)")
    for c in ["shape", "mode", *runners, "best", "autotune/heur"]:
        t.add_column(c, justify="right")
    for _, row in wide.sort_values(["M", "N", "K", "mode"]).iterrows():
        best = min(row[c] for c in runners)
        ratio = row["cublaslt"] / row["cublaslt_autotune"] if {"cublaslt", "cublaslt_autotune"} <= set(runners) else float("nan")
        t.add_row(f"{row.M}x{row.N}x{row.K}", row["mode"], *(f"{row[c]:.2f}" for c in runners), f"{best:.2f}",
                  f"{ratio:.3f}x")
    if {"cublaslt", "cublaslt_autotune"} <= set(runners):
        for mode, g in wide.groupby("mode"):
            r = g["cublaslt"] / g["cublaslt_autotune"]
            t.caption = (t.caption or "") + (f"{mode}: autotune faster than the heuristic at {int((r > 1).sum())}/{len(r)} "
                                             f"shapes, by >2% at {int((r > 1.02).sum())}; geomean {geomean(r):.3f}x.  ")
    return t


def library_table(lib) -> Table:
    from cudal2.library.manifest import STANDBY
    t = Table(title=f"kernel library {lib.folder} ({len(lib.entries)} entries)")
    for c in ("id", "shape", "family", "provenance", "score", "offline vs vendor_default", "server vs vendor_default", "gpu"):
        t.add_column(c)
    for e in lib.entries:
        sp = e.measured.get("speedup", {})
        shape = f"{e.M}x{e.N}x{e.K}" if e.M is not None else f"M={e.m_range[0]}-{e.m_range[1]} N={e.N} K={e.K}"
        standby = e.extra.get(STANDBY)   # replaced, kept until a product bench decides
        t.add_row(e.id + (f" (standby for {standby})" if standby else ""), shape, e.family,
                  e.provenance.get("kind", "?"), f"{e.score:.3f}x",
                  *(f"{sp.get(m, {}).get('vendor_default', float('nan')):.3f}x" for m in ("offline", "server")),
                  str(e.gpu.get("name")))
    return t


def bench_table(results: list[EvalResult]) -> Table:
    """Per-shape speedups against each baseline, both modes, then geomeans per size band."""
    ok = [r for r in results if r.ok]
    gpu = ok[0].gpu.get("name", "?") if ok else "?"
    t = Table(title=f"library vs baselines on {gpu}: speedup = t_baseline / t_library (>1 is faster)")
    cols = [("offline", "vendor_default"), ("offline", "cublaslt_autotune"), ("server", "vendor_default"),
            ("server", "cublaslt_autotune")]
    t.add_column("shape"); t.add_column("band log2(MNK)")
    for m, b in cols:
        t.add_column(f"{m} vs {b}", justify="right")
    t.add_column("offline % of floor", justify="right")
    bands: dict[int, list[EvalResult]] = {}
    for r in sorted(ok, key=lambda r: r.M * r.N * r.K):
        bnd = int(math.log2(r.M * r.N * r.K))  # size band
        bands.setdefault(bnd, []).append(r)
        t.add_row(f"{r.M}x{r.N}x{r.K}", str(bnd), *(f"{r.speedup.get(m, {}).get(b, float('nan')):.3f}" for m, b in cols),
                  f"{100 * r.floor_fraction.get('offline', float('nan')):.1f}")
    for bnd, rs in sorted(bands.items()):
        t.add_row(f"[bold]geomean band {bnd}[/] ({len(rs)})", str(bnd),
                  *(f"{geomean(r.speedup.get(m, {}).get(b) for r in rs):.3f}" for m, b in cols),
                  f"{100 * geomean(r.floor_fraction.get('offline') for r in rs):.1f}")
    if ok:
        t.add_row(f"[bold]geomean all[/] ({len(ok)})", "", *(f"{geomean(r.speedup.get(m, {}).get(b) for r in ok):.3f}" for m, b in cols),
                  f"{100 * geomean(r.floor_fraction.get('offline') for r in ok):.1f}")
    return t


def product_table(rows: list[dict], geo: dict, summary: dict, api: str = "torch") -> Table:
    """The product-path bench: per shape t_vendor / t_library in each mode (>1: the library is
    faster), whether the library's kernel ran, then geomeans per size band; `api` picks the rows
    (torch: cudal2.linear vs F.linear; cupy: cudal2.matmul vs cupy.matmul). A mode not measured is -."""
    what = "cudal2.matmul vs cupy.matmul" if api == "cupy" else "cudal2.linear vs F.linear"
    t = Table(title=f"{what} on {summary.get('gpu', '?')} (first call "
                    f"{summary.get('first_call_ms', float('nan')):.1f} ms)")
    for c in ("shape", "kernel ran", "eager", "graph", "flushed", "% of copy (graph/flushed)"):
        t.add_column(c, justify="right")
    cell = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    for r in rows:
        if r.get("api", "torch") != api:
            continue
        t.add_row(f"{r['M']}x{r['N']}x{r['K']}", "yes" if r["kernel_ran"] else "[yellow]vendor[/]",
                  *(cell(r.get(m)) for m in ("eager", "graph", "flushed")), _copy_cell(r))
    for name, g in geo.items():
        t.add_row(f"[bold]geomean {name}[/] ({g['shapes']})", "",
                  *(f"[bold]{cell(g.get(m))}[/]" for m in ("eager", "graph", "flushed")), "")
    return t


def _copy_cell(r: dict) -> str:
    """A decode row's B read rate by cudal2.linear as % of a device copy's read+write rate, per mode."""
    pct = (r.get("copy") or {}).get("pct_of_copy", {})
    return " / ".join(f"{pct[m]['ours']:.0f}%" if m in pct else "-" for m in ("graph", "flushed")) if pct else "-"
