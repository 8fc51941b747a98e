"""What a kernel family is: a parameter space, its validity rules, a cheap prior, and a jinja2
template that renders one complete `.cu` file under the kernel contract (docs/kernel-contract.md):
contract v2 (device code plus a `cudal2-launch` spec) for `sm80`, contract v1 (trusted host code)
for the CUTLASS family `sm90`.

Guarantees: `render` produces a file that declares the exact shape it was rendered for
(`// cudal2-shapes:`) when the family is shape-specific, and otherwise a text identical for every
shape (so its build is cached once), names its family and parameters in a header comment, and compiles
(when `invalid` returned None) for the archs in `build_archs`; `invalid` rejects a point before
anything is compiled, with a reason; `neighbors` moves one parameter one step.

Does not: compile, run or time anything (the harness does).
"""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from cudal2.problem import Problem

TEMPLATES = Path(__file__).parent / "templates"
_env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                          keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)


@dataclass(frozen=True)
class Limits:
    """What the device allows; defaults are the H100 SXM's."""
    sm_count: int = 132
    smem_per_block: int = 227 * 1024
    regs_per_sm: int = 65536
    cc: tuple[int, int] = (9, 0)
    # Clusters of each size resident at once at one CTA per SM, by cudaOccupancyMaxActiveClusters on
    # the H100 SXM (eval/cluster_occupancy.cu, results/cluster_occupancy_h100_2026-12-06.json). A
    # cluster must sit inside one GPC, so the 132 SMs hold 30 clusters of 4 and 15 of 8, not 33 and 16.
    # Not probed on other GPUs: a device built with other GPCs needs its own table.
    cluster_slots: tuple[tuple[int, int], ...] = ((1, 132), (2, 66), (4, 30), (8, 15), (16, 7))

    def resident_clusters(self, size: int, per_sm: int) -> int:
        """Clusters of `size` CTAs resident at once when `per_sm` CTAs fit an SM. The calculator gave at
        least `per_sm` times the one-a-SM count at every size and 1-8 CTAs an SM (clusters of 8: 15,
        30, 45), so that product is a floor."""
        return per_sm * dict(self.cluster_slots).get(size, 0)


Params = dict[str, Any]


def cdiv(a: int, b: int) -> int:
    """Ceiling division (tiles needed to cover `a` in steps of `b`)."""
    return -(-a // b)


MAX_REGS = 255   # registers a thread can have


def ctas_per_sm(smem_bytes: int, regs_est: int, threads: int, lim: Limits) -> int:
    """CTAs of one kernel resident on an SM at a time: the least of what shared memory (1 KiB
    reserved per CTA), registers (allocated in 8s) and thread slots allow, at least 1, at most 32."""
    by_smem = (lim.smem_per_block + 1024) // (smem_bytes + 1024)
    by_regs = lim.regs_per_sm // (min(MAX_REGS, cdiv(regs_est, 8) * 8) * threads)
    by_threads = 2048 // threads
    return max(1, min(by_smem, by_regs, by_threads, 32))


class Family:
    name: str = ""
    template: str = ""               # file in cudal2/kernels/templates/
    build_archs: tuple[str, ...] = ("sm_90a",)
    space: dict[str, tuple] = {}     # parameter -> allowed values, in order
    # A shape-specific family bakes M, N, K into the source (one build per shape); a generic one
    # takes them at run time, so one build serves every shape and the build cache is shared.
    shape_specific: bool = True
    # Offered to the LLM as a retrieved seed example (`retrieval.corpus.seed_chunks`).
    retrieval_seed: bool = True
    # Parameters that only change the order in which the kernel walks its work items, not the code
    # that does the work: where one point fails to build, its siblings in these fail the same way
    # (the search skips them: `build_class`).
    walk_params: tuple[str, ...] = ()
    # Parameters that tune a structure rather than choose one (the walk order, and for some families
    # the grid's size): the prior barely tells their values apart, so the search's exploration
    # covers structures first and their values after (`structure`).
    tuning_params: tuple[str, ...] | None = None   # None: the walk parameters
    # The parameters that name a plan: how the output is tiled and how the work is cut (tile shape,
    # split, schedule). Exploration covers plans before the structures within them (`plan`): the
    # prior ranks a plan's stage counts, clusters and epilogues close together, and a round of 16
    # once went to one tile shape in those variants while split-K went untried.
    plan_params: tuple[str, ...] | None = None     # None: no level above the structure

    def invalid(self, params: Params, p: Problem, lim: Limits) -> str | None:
        """None when the point can be built and run for `p`; otherwise why not."""
        raise NotImplementedError

    def prior(self, params: Params, p: Problem, lim: Limits) -> float:
        """Higher is more promising; cheap, no compilation."""
        return 0.0

    def context(self, params: Params, p: Problem) -> dict[str, Any]:
        """Template variables beyond the parameters and the shape (derived constants)."""
        return {}

    def frame(self, params: Params, p: Problem) -> Problem:
        """The problem the point's tiles are laid over: `p` itself unless a family says otherwise
        (sm90raw's SWAP: the transpose). The template's M, N and K are the frame's; `context` is given
        the caller's problem."""
        return p

    def render(self, params: Params, p: Problem) -> str:
        q = self.frame(params, p)
        ctx = {**params, "M": q.M, "N": q.N, "K": q.K, "family": self.name, "shape_specific": self.shape_specific,
               "params_json": json.dumps(params, sort_keys=True), **self.context(params, p)}
        return _env.get_template(self.template).render(**ctx)

    def build_class(self, params: Params, p: Problem) -> str:
        """What decides, as far as the search can tell without compiling, whether `params` builds at
        `p`: the point less its walk parameters, and which of the edges of its `frame` its BM x BN x BK
        tiles (BK 64 where the point names none) leave partial: the code at a partial edge differs.
        Families whose points name no BM/BN count the exact shape instead."""
        rest = self._less(params, self.walk_params)
        q = self.frame(params, p)
        if "BM" in rest and "BN" in rest:
            where = f"{q.M % rest['BM'] == 0}{q.N % rest['BN'] == 0}{q.K % rest.get('BK', 64) == 0}"
        else:
            where = str(p)
        return f"{self.name}|{json.dumps(rest, sort_keys=True)}|{where}"

    def points(self) -> list[Params]:
        keys = list(self.space)
        return [dict(zip(keys, vals)) for vals in itertools.product(*(self.space[k] for k in keys))]

    def structure(self, params: Params) -> str:
        """The point less its tuning parameters: points that share it run the same code on the
        same tiles and differ only in walk order or grid size."""
        tuning = self.walk_params if self.tuning_params is None else self.tuning_params
        return json.dumps(self._less(params, tuning), sort_keys=True)

    def plan(self, params: Params) -> str:
        """The point's plan parameters alone (its structure where the family names none)."""
        if self.plan_params is None:
            return self.structure(params)
        return json.dumps({k: v for k, v in self.complete(params).items() if k in self.plan_params}, sort_keys=True)

    def _less(self, params: Params, names: tuple[str, ...]) -> Params:
        """The complete point without the parameters `names`."""
        return {k: v for k, v in self.complete(params).items() if k not in names}

    def valid_points(self, p: Problem, lim: Limits) -> list[Params]:
        return [x for x in self.points() if self.invalid(x, p, lim) is None]

    def complete(self, params: Params) -> Params:
        """`params` with any parameter it lacks set to that parameter's first value: a point recorded
        before a parameter was added to the space meant that value (the template's old behaviour)."""
        return {k: params.get(k, values[0]) for k, values in self.space.items()}

    def neighbors(self, params: Params, rng: random.Random | None = None) -> list[Params]:
        params = self.complete(params)
        out = []
        for k, values in self.space.items():
            i = values.index(params[k])
            for j in (i - 1, i + 1):
                if 0 <= j < len(values):
                    out.append({**params, k: values[j]})
        if rng:
            rng.shuffle(out)
        return out


_registry: dict[str, Family] = {}


def register(f: Family) -> Family:
    _registry[f.name] = f
    return f


def families() -> dict[str, Family]:
    from cudal2.kernels import skinny, sm80, sm90, sm90raw, stream, tiled  # noqa: F401  (registration on import)
    return dict(_registry)


def get_family(name: str) -> Family:
    fams = families()
    if name not in fams:
        raise KeyError(f"unknown kernel family {name!r}; known: {', '.join(sorted(fams))}")
    return fams[name]
