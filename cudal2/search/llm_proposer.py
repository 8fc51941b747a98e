"""The LLM proposer: retrieval-augmented prompts with contrastive feedback, sampled from any backend.

Guarantees:
- parents: the best verified contract v2 candidate of the shape, plus diverse other v2 ones
  (differing in family, tile, stages or split-K), one prompt per parent; with no verified v2
  candidate yet (none, or only v1 ones such as CUTLASS renders), one prompt from scratch. A v1
  source is never shown as a parent: it is trusted-only host code, and an edit of it is rejected;
- every prompt carries the shape, this GPU's facts, the physical floor, the baseline times to
  beat (once any candidate was timed), retrieved notes, and the nearest v2 library entry or seed kernel,
  earlier variants best-first with times, registers and spills, the latest failures with stage
  and reason, and the best's Nsight Compute metrics when it was profiled;
- each completion becomes a `Proposal`; one that cannot be parsed (no file, a SEARCH block that
  does not match) becomes a proposal with no source and the parse error, which the engine records
  as a failure and feeds back in the next prompt, never skipping it silently;
- a backend error costs this proposer its share of the round (the engine catches it).

Does not: evaluate, or write the trace (the engine does both, once verdicts are known).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from typing import Any, Callable

from cudal2.config import Config
from cudal2.harness.evaluate import stored
from cudal2.harness.store import Store
from cudal2.llm.parse import ParseError, candidate_source
from cudal2.problem import Problem
from cudal2.retrieval.corpus import is_v2, log_shape_distance
from cudal2.search.population import Member, Population
from cudal2.search.proposers import Proposal

_FEATURES = ("BM", "BN", "TILE_M", "TILE_N", "STAGES", "SPLIT_K", "SCHEDULE")


def signature(m: Member) -> tuple:
    return (m.family,) + tuple(m.params.get(k) for k in _FEATURES)


def select_parents(pop: Population, p: Problem, k: int, editable: Callable[[Member], bool] | None = None) -> list[Member]:
    """The best, then the best-scoring members whose kernel features differ from those chosen;
    only members `editable` accepts (all when None)."""
    ranked = pop.best(p, 64)
    chosen: list[Member] = []
    for m in ranked:
        if len(chosen) >= k:
            break
        if editable is not None and not editable(m):
            continue
        if all(signature(m) != signature(c) for c in chosen):
            chosen.append(m)
    return chosen


class LLMProposer:
    name = "llm"
    wants_profile = True   # the engine profiles the best so its ncu metrics reach the prompt

    def __init__(self, backend, cfg: Config, store: Store, gpu_name: str, device: dict[str, Any], retriever=None):
        self.backend, self.cfg, self.store, self.gpu_name = backend, cfg, store, gpu_name
        self.device, self.retriever = device, retriever

    # --- what the prompt says ----------------------------------------------------------------
    def editable(self, m: Member) -> bool:
        """A member may be a parent when its source is stored and is contract v2."""
        src = self.store.source(m.source_hash)
        return src is not None and is_v2(src)

    def result(self, m: Member, p: Problem, profile: bool = False):
        src = self.store.source(m.source_hash)
        return None if src is None else stored(self.store, src, p, self.cfg, self.gpu_name, profile)

    def history(self, pop: Population, p: Problem, limit: int = 8) -> tuple[list[dict], list[dict]]:
        """Earlier variants best first (times, registers, spills, and the best's ncu metrics), and the
        latest failures with stage, reason, compiler error and mismatch statistics."""
        done = pop.members(p, "done")
        good = sorted((m for m in done if m.score is not None), key=lambda m: -m.score)[:limit]
        variants = []
        for i, m in enumerate(good):
            r = self.result(m, p)
            res = next(iter(r.build.get("resources", {}).values()), {}) if r else {}
            prof = self.result(m, p, profile=True) if i == 0 else None
            src = self.store.source(m.source_hash)
            variants.append({"name": m.name, "score": m.score, "stage": m.stage, "reason": "",
                             "contract": "v2" if src is not None and is_v2(src) else "v1",
                             "times_us": {mode: rs["candidate"].median_us for mode, rs in (r.times.items() if r else [])
                                          if "candidate" in rs},
                             "ptxas": {"registers": res.get("registers"), "spills": res.get("spill_stores", 0)} if res else {},
                             "ncu": prof.profile.get("summary", {}) if prof else {}})
        failures = []
        for m in [m for m in done if not m.ok][-limit:]:
            r = self.result(m, p)
            stats = {}
            if r and m.stage in r.checks.get(str(p), {}):
                last = r.checks[str(p)][m.stage][-1]
                stats = {k: v for k, v in last.items() if k in ("rel", "max", "vendor_rel", "rel_ratio", "mismatches",
                                                                "nonfinite", "differing")}
            failures.append({"name": m.name, "stage": m.stage, "reason": (r.reason if r else m.reason)[:600],
                             "compiler_error": r.build.get("log_tail", "")[-1200:] if r and m.stage == "build" else "",
                             "mismatch": stats})
        return variants, failures

    def baselines(self, pop: Population, p: Problem) -> dict[str, dict[str, float]]:
        for m in pop.best(p, 4):
            r = self.result(m, p)
            if r and r.times:
                return {mode: {n: round(t.median_us, 2) for n, t in rs.items() if n != "candidate"}
                        for mode, rs in r.times.items()}
        return {}

    def retrieved(self, p: Problem) -> list:
        """Technique notes for this kind of shape (BM25), then the kernel nearest in log-shape space
        that fits the token budget: a verified library entry, or a seed kernel when none fits."""
        L = self.cfg.llm
        if self.retriever is None or L.retrieval_k == 0:
            return []
        big = p.M * p.N >= 1 << 22
        query = (f"HGEMM fp16 M={p.M} N={p.N} K={p.K} " +
                 ("wgmma TMA 128B swizzle mbarrier warp specialization setmaxnreg persistent tile scheduler cluster "
                  "multicast epilogue" if big else
                  "small skinny shape tile choice split-K wave quantization mma.sync ldmatrix cp.async"))
        notes = self.retriever.search(query, max(1, L.retrieval_k - 1), L.retrieval_tokens, kinds=["note"])
        left = L.retrieval_tokens - sum(c.tokens for c in notes)
        fits = [c for c in self.retriever.chunks if c.tokens <= left and c.meta.get("shape") and is_v2(c.text)]
        # The library's entry for this very shape is the current best, shown already as history or parent.
        lib = [c for c in fits if c.kind == "library" and list(c.meta["shape"]) != [p.M, p.N, p.K]]
        pool = lib or [c for c in fits if c.kind == "seed"]
        if pool:
            notes.append(min(pool, key=lambda c: log_shape_distance(c.meta["shape"], c.meta.get("m_range"),
                                                                    p.M, p.N, p.K)))
        return notes

    def shared(self, p: Problem, pop: Population) -> dict[str, Any]:
        """The parts of the task that every parent's prompt in one round shares."""
        d = self.device
        variants, failures = self.history(pop, p)
        return {"shape": {"M": p.M, "N": p.N, "K": p.K},
                "gpu": {"name": d["name"], "sm_count": d["sm_count"], "l2_bytes": d["l2_bytes"],
                        "smem_per_block_optin": d["smem_per_block_optin"], "max_sm_clock_mhz": d["max_sm_clock_mhz"],
                        "peak_tflops": d["peak_flops"] / 1e12, "peak_tb_s": d["peak_bytes_per_s"] / 1e12},
                "floor_us": p.floor_s(d["peak_flops"], d["peak_bytes_per_s"]) * 1e6,
                "baselines": self.baselines(pop, p), "chunks": self.retrieved(p),
                "history": variants, "failures": failures}

    def messages(self, p: Problem, pop: Population, parent: Member | None,
                 shared: dict[str, Any] | None = None) -> tuple[list[dict[str, str]], str, str | None]:
        """The prompt for `parent` (None: write from scratch), its output mode and the parent's source.
        `shared` is `self.shared(p, pop)`, computed once per round by `propose`. A parent whose source
        is not v2 is not shown: the prompt is then a full-mode one from scratch."""
        from cudal2.retrieval.render import contract_vars, render_prompt
        parent_src = self.store.source(parent.source_hash) if parent else None
        if parent_src is not None and not is_v2(parent_src):
            parent_src = None
        mode = self.cfg.llm.output_mode if parent_src else "full"
        task = {**(shared or self.shared(p, pop)), "parent": parent_src if mode == "diff" else None, "output_mode": mode}
        return render_prompt({**contract_vars(self.cfg), "output_mode": mode}, task), mode, parent_src

    # --- proposing ---------------------------------------------------------------------------
    def propose(self, p: Problem, pop: Population, n: int, rng: random.Random) -> list[Proposal]:
        L = self.cfg.llm
        prompts = max(1, math.ceil(n / L.samples))
        parents: list[Member | None] = select_parents(pop, p, prompts, self.editable) or [None]
        out: list[Proposal] = []
        shared = self.shared(p, pop)
        for parent in parents:
            msgs, mode, parent_src = self.messages(p, pop, parent, shared)
            phash = hashlib.sha256(json.dumps(msgs).encode()).hexdigest()[:16]
            for i, text in enumerate(self.backend.propose(msgs, L.samples, L.temperature, L.max_tokens)):
                meta = {"prompt": msgs, "completion": text, "prompt_hash": phash, "model": self.backend.name,
                        "output_mode": mode}
                try:
                    src = candidate_source(text, mode, parent_src)
                except ParseError as e:
                    src, meta["parse_error"] = "", str(e)
                out.append(Proposal(f"llm-{phash[:8]}-{i}", src, self.name, parent.family if parent else "", {},
                                    parent.id if parent else None, meta))
        return out
