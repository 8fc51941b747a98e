"""Profile one candidate call with Nsight Compute and reduce the report to a few numbers.

Guarantees: `profile` runs `ncu` on `profile_target` (one call after two warm-ups, profiled
between cudaProfilerStart/Stop only), with the GPU clocks left alone (`--clock-control none`),
and returns `parse_ncu_csv`'s dict. It kills ncu's whole process group on timeout and raises
`ProfileError` with the tail of ncu's output when ncu fails or profiles no kernel.
`parse_ncu_csv` reads ncu's raw CSV page (header row of metric names, a units row, one row per
kernel launch), tolerates noise lines, missing columns and "n/a" values, and aggregates the
kernels of the call: durations and counts are summed, percentages and ratios are
duration-weighted means, launch attributes come from the longest kernel.

Does not: time anything for judging (ncu replays kernels and flushes caches between passes),
or check the candidate's output. Metric names are data (`METRIC_SETS`, `METRIC_ALIASES`,
`STALL_PATTERNS`): ncu rejects a whole run for one unknown name, so fix names there.
"""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterable

# ---------------------------------------------------------------------------------------------
# Metric names. Every name below was accepted by Nsight Compute 2025.3.1 on the H100 (sm_90)
# and is listed by `ncu --query-metrics --chip gh100`. Notes from that check:
# - the raw page prints a requested `X.avg.<sub>` as X.{avg,min,max,sum}.<sub> and adds every
#   device__/launch__/nvlink__/profiler__ attribute; the parser keeps only what was asked for;
# - `sm__pipe_tensor_cycles_active` counts wgmma and mma.sync alike (it equals the hmma pipe
#   metric on sm_90); `sm__inst_executed_pipe_tensor_op_gmma` is non-zero only for wgmma;
#   there is no `sm__pipe_tensor_op_gmma_cycles_active`;
# - `regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$` selects the same
#   19 stall columns as `STALL_METRICS`.

DURATION = "gpu__time_duration.sum"

# Profiled in place of a candidate library: cuBLAS itself, for comparison (see profile_target).
CUBLAS = "cublas"

# Warp-stall reasons, one metric per reason: "warps stalled for <reason> per issued
# instruction" (the Warp State Statistics section's numbers). `gmma` is Hopper's wgmma wait.
STALL_REASONS = [
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss",
    "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc",
    "no_instruction", "not_selected", "selected", "short_scoreboard", "sleeping",
    "tex_throttle", "wait",
]
STALL_METRICS = [f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio"
                 for r in STALL_REASONS]

# Columns that hold a stall reason; group 1 is the reason. Several families are accepted so
# that a metric set may use another one.
STALL_PATTERNS = [
    re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$"),
    re.compile(r"^smsp__average_warp_latency_issue_stalled_(\w+?)\.ratio$"),
    re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+?)$"),
]

_SOL = [
    DURATION,
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
]
_TENSOR = [
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",
]
_OCCUPANCY = [
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__grid_size",
    "launch__block_size",
    "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_static",
]
_ISSUE = [
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "smsp__average_warp_latency_per_inst_issued.ratio",
]
_MEMORY = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sector_hit_rate.pct",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__sass_inst_executed_op_local_ld.sum",
    "smsp__sass_inst_executed_op_local_st.sum",
]

METRIC_SETS: dict[str, list[str]] = {
    # speed-of-light only: one or two replay passes
    "quick": _SOL + ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"],
    "default": _SOL + _TENSOR + _OCCUPANCY + _ISSUE + STALL_METRICS,
    "memory": _SOL + _TENSOR + _OCCUPANCY + _MEMORY,
}

# Short keys for the result dict; a metric without one keeps its ncu name.
METRIC_ALIASES: dict[str, str] = {
    DURATION: "duration_ns",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_pct",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": "l2_pct",
    "l1tex__throughput.avg.pct_of_peak_sustained_active": "l1_pct",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor_pipe_pct",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active":
        "tensor_hmma_pipe_pct",
    "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active":
        "tensor_hmma_inst_pct",
    "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active":
        "tensor_gmma_inst_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "launch__registers_per_thread": "registers_per_thread",
    "launch__occupancy_limit_registers": "occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem": "occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps": "occupancy_limit_warps",
    "launch__occupancy_limit_blocks": "occupancy_limit_blocks",
    "launch__grid_size": "grid_size",
    "launch__block_size": "block_size",
    "launch__shared_mem_per_block_dynamic": "dynamic_smem_bytes",
    "launch__shared_mem_per_block_static": "static_smem_bytes",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue_active_pct",
    "smsp__average_warp_latency_per_inst_issued.ratio": "warp_cycles_per_issue",
    "dram__bytes_read.sum": "dram_read_bytes",
    "dram__bytes_write.sum": "dram_write_bytes",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum": "smem_bank_conflicts",
    "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active": "tma_pipe_pct",
    "smsp__sass_inst_executed_op_local_ld.sum": "local_ld_inst",
    "smsp__sass_inst_executed_op_local_st.sum": "local_st_inst",
}

_TIME_TO_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6,
               "ms": 1e6, "second": 1e9, "s": 1e9}
_MISSING = {"", "n/a", "N/A", "na", "-", "nan"}


class ProfileError(RuntimeError):
    """ncu failed, timed out, or profiled no kernel; the message ends with ncu's output tail."""


# ---------------------------------------------------------------------------------------------
# Command


def ncu_command(lib_path: str, M: int, N: int, K: int, metric_set: str = "default",
                ncu: str = "ncu") -> list[str]:
    """The argv that profiles one call of `lib_path` (or of cuBLAS, for `CUBLAS`) at M×N×K with
    `METRIC_SETS[metric_set]`."""
    try:
        metrics = METRIC_SETS[metric_set]
    except KeyError:
        raise ValueError(f"unknown metric set {metric_set!r}; "
                         f"known: {', '.join(sorted(METRIC_SETS))}") from None
    return [
        ncu,
        "--clock-control", "none",
        "--profile-from-start", "off",
        "--target-processes", "application-only",
        "--csv", "--page", "raw",
        "--print-units", "base",
        "--metrics", ",".join(metrics),
        sys.executable, "-m", "cudal2.harness.profile_target",
        lib_path if lib_path == CUBLAS else os.path.abspath(lib_path), str(int(M)), str(int(N)), str(int(K)),
    ]


# ---------------------------------------------------------------------------------------------
# Parsing


def _number(text: str) -> float | None:
    t = text.strip()
    if t in _MISSING:
        return None
    try:
        return float(t.replace(",", ""))
    except ValueError:
        return None


def _stall_reason(column: str) -> str | None:
    for pat in STALL_PATTERNS:
        m = pat.match(column)
        if m:
            return m.group(1)
    return None


def _how(name: str, unit: str) -> str:
    """How a metric aggregates over the kernels of one call: 'sum', 'mean' or 'dominant'."""
    if name == DURATION:
        return "sum"
    if name.startswith(("launch__", "device__")):
        return "dominant"
    if (unit == "%" or "pct" in name or name.endswith(".ratio") or "per_cycle" in name
            or "per_second" in name):
        return "mean"
    if name.endswith(".sum"):
        return "sum"
    return "mean"


def _rows(text: str) -> tuple[list[str], list[str], list[list[str]]]:
    """(header, units, data rows) of the raw page; lines that are not part of it are skipped."""
    header: list[str] | None = None
    units: list[str] = []
    data: list[list[str]] = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("=="):    # ==PROF== / ==WARNING== / ==ERROR== lines
            continue
        try:
            row = next(csv.reader([s]))
        except (csv.Error, StopIteration):
            continue
        if header is None:
            if "ID" in row and "Kernel Name" in row:
                header = row
            continue
        if len(row) != len(header):
            continue
        if row[header.index("ID")].strip().isdigit():
            data.append(row)
        elif not data and not units:
            units = row
    if header is None:
        return [], [], []
    return header, units or [""] * len(header), data


def parse_ncu_csv(text: str, metrics: Iterable[str] | None = None) -> dict:
    """Reduce ncu's `--csv --page raw` output to {"kernels": [...], "summary": {...}}.

    The raw page holds far more columns than were asked for (device attributes, every
    `launch__*`, the .min/.max/.sum siblings of each .avg); only `metrics` (default: every
    metric of every set in `METRIC_SETS`) and the stall columns (`STALL_PATTERNS`) are kept.

    Each kernel is {"id", "name", "block", "grid", <alias or metric>: float, ...,
    "stalls": {reason: float}}; a metric missing or "n/a" for a kernel is absent from that
    kernel. The summary holds "n_kernels", "kernel_names", "dominant_kernel" (the longest),
    "duration_ns" (the sum), the other metrics aggregated as `_how` says (means weighted by
    duration over the kernels that have the value) and "stalls", largest first.
    """
    wanted = set(metrics) if metrics is not None else {m for ms in METRIC_SETS.values()
                                                        for m in ms}
    header, units, data = _rows(text)
    col = {name: i for i, name in enumerate(header)}
    metric_cols = [(i, name) for i, name in enumerate(header)
                   if name in wanted or _stall_reason(name) is not None]

    def cell(row: list[str], name: str) -> str:
        return row[col[name]] if name in col else ""

    kernels: list[dict] = []
    for row in data:
        k: dict = {"id": int(row[col["ID"]]), "name": row[col["Kernel Name"]],
                   "block": cell(row, "Block Size"), "grid": cell(row, "Grid Size"),
                   "stalls": {}}
        for i, name in metric_cols:
            v = _number(row[i])
            if v is None:
                continue
            if units[i].strip() in _TIME_TO_NS:
                v *= _TIME_TO_NS[units[i].strip()]
            reason = _stall_reason(name)
            if reason is not None:
                k["stalls"][reason] = v
            else:
                k[METRIC_ALIASES.get(name, name)] = v
        kernels.append(k)

    summary: dict = {"n_kernels": len(kernels), "kernel_names": [k["name"] for k in kernels]}
    if not kernels:
        summary["stalls"] = {}
        return {"kernels": kernels, "summary": summary}

    dur_key = METRIC_ALIASES.get(DURATION, DURATION)
    weight = [k.get(dur_key) or 0.0 for k in kernels]
    if not any(weight):
        weight = [1.0] * len(kernels)
    dominant = max(range(len(kernels)), key=lambda j: weight[j])
    summary["dominant_kernel"] = kernels[dominant]["name"]

    def mean(values: list[tuple[float, float]]) -> float:
        total = sum(w for _, w in values)
        if total == 0:
            return sum(v for v, _ in values) / len(values)
        return sum(v * w for v, w in values) / total

    for i, name in metric_cols:
        if _stall_reason(name) is not None:
            continue
        key = METRIC_ALIASES.get(name, name)
        present = [(k[key], weight[j]) for j, k in enumerate(kernels) if key in k]
        if not present:
            continue
        how = _how(name, units[i].strip())
        if how == "sum":
            summary[key] = sum(v for v, _ in present)
        elif how == "dominant":
            summary[key] = kernels[dominant].get(key, present[0][0])
        else:
            summary[key] = mean(present)

    reasons = {r for k in kernels for r in k["stalls"]}
    stalls = {r: mean([(k["stalls"][r], weight[j]) for j, k in enumerate(kernels)
                       if r in k["stalls"]]) for r in reasons}
    summary["stalls"] = dict(sorted(stalls.items(), key=lambda kv: (-kv[1], kv[0])))
    return {"kernels": kernels, "summary": summary}


# ---------------------------------------------------------------------------------------------
# Running


def _tail(*texts: str, limit: int = 4000) -> str:
    joined = "\n".join(t for t in texts if t).strip()
    return joined[-limit:]


def profile(lib_path: str, M: int, N: int, K: int, metric_set: str = "default",
            timeout_s: float = 300, ncu: str = "ncu") -> dict:
    """Profile one call of the candidate library under ncu; returns `parse_ncu_csv`'s dict."""
    argv = ncu_command(lib_path, M, N, K, metric_set, ncu)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True, errors="replace",
                                env=env, start_new_session=True)
    except OSError as e:
        raise ProfileError(f"cannot start {ncu}: {e}") from None
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:     # a process outside the group holds the pipes
            proc.kill()
            out, err = "", "(ncu's output was lost: its pipes stayed open after the kill)"
        raise ProfileError(f"ncu timed out after {timeout_s:g} s\n{_tail(out, err)}") from None
    if proc.returncode != 0:
        raise ProfileError(f"ncu exited with {proc.returncode}\n{_tail(out, err)}")
    result = parse_ncu_csv(out, METRIC_SETS[metric_set])
    if not result["kernels"]:
        raise ProfileError(f"ncu profiled no kernel\n{_tail(out, err)}")
    return result
