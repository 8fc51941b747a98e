"""Rendering the prompt templates in `prompts/` into chat messages.

Guarantees: the prompt text lives only in `prompts/system.j2` and `prompts/task.j2`; rendering is
strict (a variable the templates use and the caller did not pass raises `jinja2.UndefinedError`,
never renders as empty), and `render_prompt` first checks the task's required variables so the
error names them; `contract_vars` takes the v2 header allow-list from the harness policy, the launch
spec's limits from `harness/launch.py` and the rest from the config, so the prompt cannot drift from
what the judge enforces.

Does not: choose what goes into the prompt (the LLM proposer does), or count tokens.

Variables:
- system: output_mode ("full" | "diff"), allowed_headers, archs, max_kernels, max_threads,
  max_cluster, swizzles, error_ratio (all from `contract_vars(cfg)`);
- task: shape {M, N, K}; gpu {name, sm_count, l2_bytes, smem_per_block_optin, max_sm_clock_mhz,
  peak_tflops, peak_tb_s}; floor_us; baselines {mode: {runner: us}}; chunks [Chunk]; history
  [{name, score, stage, reason, contract ("v1" | "v2"), times_us {mode: us}, ptxas {registers, spills},
  ncu {metric: value}}] best first (contract, ptxas and ncu may be empty or absent); failures [{name, stage, reason,
  compiler_error, mismatch {statistic: value}}] (the last three may be empty or absent); parent
  (the parent source, or None in full mode); output_mode.
"""

from __future__ import annotations

from typing import Any

import jinja2

from cudal2.resources import resource

PROMPTS = resource("prompts")
TASK_VARS = ("shape", "gpu", "floor_us", "baselines", "chunks", "history", "failures", "parent", "output_mode")


def _us(x: Any) -> str:
    """A time in microseconds with about three significant digits."""
    if x is None:
        return "n/a"
    x = float(x)
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _num(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


_env = jinja2.Environment(loader=jinja2.FileSystemLoader(PROMPTS), undefined=jinja2.StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True)
_env.filters["us"] = _us
_env.filters["num"] = _num


def render_prompt(system_vars: dict[str, Any], task_vars: dict[str, Any]) -> list[dict[str, str]]:
    for where, v in (("system", system_vars), ("task", task_vars)):
        if v.get("output_mode") not in ("full", "diff"):
            raise ValueError(f"{where} variable output_mode must be 'full' or 'diff', got {v.get('output_mode')!r}")
    missing = [k for k in TASK_VARS if k not in task_vars]
    if missing:
        raise ValueError(f"task prompt variables missing: {', '.join(missing)}")
    if task_vars["output_mode"] == "diff" and not task_vars["parent"]:
        raise ValueError("diff mode needs the parent source in task variable 'parent'")
    system = _env.get_template("system.j2").render(**system_vars)
    user = _env.get_template("task.j2").render(**task_vars)
    return [{"role": "system", "content": system.strip() + "\n"}, {"role": "user", "content": user.strip() + "\n"}]


def contract_vars(cfg) -> dict[str, Any]:
    """The system template's variables for a `Config`: the v2 (device-only) header allow-list, the
    launch spec's limits, the build archs, the accuracy bound and the output mode."""
    from cudal2.harness import launch, policy

    return {"output_mode": cfg.llm.output_mode,
            "allowed_headers": [*policy.DEVICE_HEADERS, *cfg.build.extra_headers],
            "archs": list(cfg.build.archs),
            "max_kernels": launch.MAX_KERNELS, "max_threads": launch.MAX_THREADS, "max_cluster": launch.MAX_CLUSTER,
            "swizzles": list(launch.SWIZZLES),
            "error_ratio": f"{cfg.verify.error_ratio:g}"}
