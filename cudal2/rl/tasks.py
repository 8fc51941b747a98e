"""Training tasks: one `Task` type, and the matmul stage's shapes split into train and held out.

Guarantees:
- a `Task` names its stage, its problem and its split; the matmul stage's tasks are the
  1000-shape grid (each of M, N, K in the grid's values), and `split` puts a shape in "heldout"
  by a hash of the shape alone, so every machine and every run agrees, with `holdout_fraction`
  of the grid held out;
- `prompt(task, ...)` is the prompt `cudal2 generate` sends for the shape with nothing known yet
  (the LLM proposer's own builder: the same contract and template, and with `retriever_for`'s
  retriever the same retrieved notes and nearest kernel; one code path);
- the general stage's tasks are the suite of `general.py` (`general_tasks`), split by its own
  hash; their prompt (`prompts/general.j2`) gives the task contract, the buffers, the sizes, the
  time floor and the torch reference.

Does not: judge (see `service.py`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path

from cudal2.problem import Problem

GRID = Path(__file__).resolve().parent / "data" / "grid1000.json"
# Used for prompts where no GPU can be probed (a CPU machine preparing or testing a run): the
# H100 SXM the project measures on.
H100_SXM = {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132, "l2_bytes": 50 * 2**20, "smem_per_block_optin": 232448,
            "max_sm_clock_mhz": 1980, "peak_flops": 989.4e12, "peak_bytes_per_s": 3.35e12, "cc": [9, 0]}


@dataclass(frozen=True)
class Task:
    id: str
    stage: str               # "matmul" or "general"
    problem: Problem | None  # the HGEMM shape (matmul)
    split: str               # "train" or "heldout"
    general: str = ""        # the general suite's task id (general)

    @property
    def target(self) -> Problem | str:
        """What the reward service judges this task as: a shape, or a general task id."""
        return self.problem if self.problem is not None else self.general


def split(p: Problem, holdout_fraction: float) -> str:
    h = int(hashlib.sha256(f"{p.M}x{p.N}x{p.K}".encode()).hexdigest()[:8], 16) / 16**8
    return "heldout" if h < holdout_fraction else "train"


def matmul_tasks(holdout_fraction: float) -> list[Task]:
    values = json.loads(GRID.read_text())["values"]
    out = []
    for M, N, K in itertools.product(values, repeat=3):
        p = Problem(M, N, K)
        out.append(Task(f"matmul-{M}x{N}x{K}", "matmul", p, split(p, holdout_fraction)))
    return out


def general_tasks() -> list[Task]:
    from cudal2.rl import general
    return [Task(f"general-{t.id}", "general", None, general.split(t), t.id) for t in general.SUITE]


def general_prompt(task: Task, device: dict | None = None) -> list[dict[str, str]]:
    """The chat messages of stage general for one task."""
    import jinja2

    from cudal2.resources import resource
    from cudal2.rl import general
    t, d = general.BY_ID[task.general], device or H100_SXM
    ctypes = {"f16": "const __half*", "bf16": "const __nv_bfloat16*", "f32": "const float*", "i32": "const int*",
              "i64": "const long long*"}
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(resource("prompts")), undefined=jinja2.StrictUndefined)
    text = env.get_template("general.j2").render(
        task=t, gpu=d["name"], sm_count=d["sm_count"], compile=False,
        ctypes=", ".join(f"{k} {v.replace('const ', '')}" for k, v in ctypes.items()),
        floor_us=general.floor_s(t, d["peak_flops"], d["peak_bytes_per_s"]) * 1e6,
        reference=general.reference_text(t))
    return [{"role": "user", "content": text}]


def retriever_for(cfg, arch: str = "sm90"):
    """The retriever `generate` builds for this architecture's library (notes, seeds, entries)."""
    from cudal2.library import folder
    from cudal2.retrieval import Retriever, corpus
    return Retriever(corpus.build(folder(cfg.library.root or None, arch)), cfg.llm.embedding_model)


def prompter(cfg, device: dict | None = None, retriever=None):
    """task -> the chat messages `generate` would send for its shape with no history (one LLM
    proposer, with an empty population, serves every task)."""
    import tempfile

    from cudal2.harness.store import Store
    from cudal2.search.llm_proposer import LLMProposer
    from cudal2.search.population import Population
    d = device or H100_SXM
    tmp = tempfile.mkdtemp()
    lp = LLMProposer(None, cfg, Store(f"{tmp}/s.sqlite"), d["name"], d, retriever)
    pop = Population(f"{tmp}/p.sqlite")
    return lambda task: general_prompt(task, d) if task.stage == "general" else lp.messages(task.problem, pop, None)[0]


def prompt(task: Task, cfg, device: dict | None = None, retriever=None) -> list[dict[str, str]]:
    """The chat messages `generate` would send for this task's shape with no history."""
    return prompter(cfg, device, retriever)(task)
