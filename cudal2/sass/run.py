"""`cudal2 sass`: the assembly game on library entries, and publishing what wins.

Guarantees:
- `select` picks entries by id (or a unique id prefix) or all of them (every entry ships a cubin),
  sm80 family first, and refuses an unknown id in one line (`SassError`);
- `play` runs one entry: the game on the kernel of its cubin with the most movable instructions,
  the agent within the time budget, timing paired against the shipped cubin in a worker process
  (`verify.PairedMeasure`); then, only for a gain that reached `min_gain` twice (the agent's
  reproduction), the bitwise comparison with the original on every shape the judge verifies the
  entry at (`verify.bitwise`), then the build's rules on the reordered cubin
  (`build.binary_violations`), then the judge's full checks and timing against the vendor on it,
  beside the shipped cubin judged again now;
- a new library entry is written only after all of that passed, through `library.writer.add`
  (atomic manifest, never a loss: it must beat the vendor by `[library] serve_margin` and score
  above the parent measured now, else nothing changes). It has provenance `{"kind": "sass",
  "parent": ..., "orders": ...}` with the schedule (per block, original instruction indices),
  the parent's device hash, the agent, both gains and the checker and GPU counts, so the reorder
  can be replayed (`game.replay`) on the parent's binary; its id is
  `<M>x<N>x<K>-<family>-sass-<first 10 hex of the new cubin's sha256>`, its source the parent's;
- every outcome (published or not) comes back as an `Outcome`, with the GPU seconds spent.

Does not:
- survive `cudal2 library build` (it rebuilds every v2 binary from source, so a `sass` entry's
  cubin would go back to ptxas's order; the recorded schedule is what re-applies it);
- play more than one kernel per entry (a split-K entry's reduction kernel is left as it is);
- run without a GPU: `verify` raises `NoGPU` first.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from cudal2.library import manifest
from cudal2.library.manifest import Entry


class SassError(ValueError):
    """A request `cudal2 sass` cannot serve; the message is one line."""


def select(entries: list[Entry], entry_id: str | None, all_: bool) -> list[Entry]:
    if all_ == (entry_id is not None):
        raise SassError("give exactly one of --entry ID or --all")
    if all_:
        if not entries:
            raise SassError("the library has no entries (cudal2 generate fills it)")
        return sorted(entries, key=lambda e: (e.family != "sm80", e.N, e.K, e.M or 0))
    match = [e for e in entries if e.id == entry_id] or [e for e in entries if e.id.startswith(entry_id)]
    if len(match) != 1:
        raise SassError(f"no single library entry matches {entry_id!r} ({len(match)} do; see `cudal2 library ls`)")
    return [match[0]]


@dataclass
class Outcome:
    id: str
    status: str                   # published | no legal moves | no gain | bitwise mismatch | judge failed | not better
    detail: str = ""
    agent: dict = field(default_factory=dict)     # AgentResult.to_dict() without the trace
    gpu_s: float = 0.0            # wall seconds of GPU jobs: measurements, bitwise check, judging
    new_id: str | None = None
    judged: dict = field(default_factory=dict)    # {"reordered": score, "shipped": score}

    @property
    def gain(self) -> float | None:
        return self.agent.get("gain")


def _judge(path: Path, e: Entry, source: str, cfg, worker, gpu: str):
    """The build's rules, the judge's verification stages and timing on a cubin, as the search
    judges a candidate."""
    from cudal2.harness.evaluate import Evaluator
    return Evaluator(cfg, worker=worker, gpu_name=gpu).judge_cubin(path, Path(path).stem, e.spec, source, e.problem(),
                                                                   claim=e.claim())


def play(e: Entry, folder: Path, cfg, gpu: str, agent: str = "greedy", budget_s: float = 300.0,
         min_gain: float = 0.01, max_latency: int | None = None, publish: bool = True, seed: int = 0,
         worker=None) -> Outcome:
    from cudal2.harness.worker import Worker
    from cudal2.library import writer
    from cudal2.result import Stage
    from cudal2.sass import agents, verify
    from cudal2.sass.game import Game
    from cudal2.search.score import score

    data = (folder / e.binary).read_bytes()
    source = (folder / e.source).read_text()
    shape = (e.M if e.M is not None else e.m_range[1], e.N, e.K)
    own = worker is None
    worker = worker or Worker(cfg.run.gpu, cfg.run.job_timeout_s)
    t_gpu = 0.0
    try:
        measure = verify.PairedMeasure(data, e.spec, shape, worker=worker)
        try:
            game = Game(data, measure, max_latency=max_latency)
            if not game.legal_swaps():
                return Outcome(e.id, "no legal moves", f"the checker allows no move in {game.kernel}",
                               {"kernel": game.kernel, "stats": game.stats.to_dict()})
            res = agents.AGENTS[agent](game, agents.Budget(seconds=budget_s), min_gain=min_gain, seed=seed)
            new = game.cubin()
        finally:
            measure.close()
        t_gpu += game.stats.measure_s
        summary = {k: v for k, v in res.to_dict().items() if k != "trace"}
        if game.rejections:
            summary["rejections"] = game.rejections
        out = Outcome(e.id, "no gain", agent=summary, gpu_s=t_gpu)
        if not res.reproduced:
            out.detail = (f"best gain {res.gain:+.2%}, again {res.gain_repeat:+.2%}" if res.gain_repeat is not None
                          else "no schedule measured faster")
            return out
        t0 = time.monotonic()
        bw = verify.bitwise(data, new, e.spec, verify.verify_shapes(e), trials=16, worker=worker)
        out.gpu_s += time.monotonic() - t0
        if not bw.ok:
            out.status, out.detail = "bitwise mismatch", bw.reason
            return out
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / f"{e.id}-sass.cubin"
            path.write_bytes(new)
            # The judge starts with the build's rules on the machine code: a reorder keeps each
            # block's register dependencies, but the rules, not that argument, are what it relies on.
            t0 = time.monotonic()
            r_new = _judge(path, e, source, cfg, worker, gpu)
            r_old = _judge(folder / e.binary, e, source, cfg, worker, gpu) if r_new.ok else None
            out.gpu_s += time.monotonic() - t0
            if not r_new.ok:
                refused = r_new.stage is Stage.BUILD
                out.status = "refused by the build's rules" if refused else "judge failed"
                out.detail = r_new.reason if refused else f"{r_new.stage.value}: {r_new.reason}"
                return out
            s_new, s_old = score(r_new), score(r_old) if r_old is not None and r_old.ok else None
            out.judged = {"reordered": s_new, "shipped": s_old}
            ne = sass_entry(e, r_new, s_new, source, new, summary, max_latency)
            if not publish:
                out.status, out.detail = "not published", "--no-publish"
                return out
            rescored = {e.id: s_old} if s_old is not None else {}
            if not writer.add(folder, ne, source, rescored, binary=str(path), margin=cfg.library.serve_margin):
                out.status = "not better"
                old = "unjudged" if s_old is None else f"{s_old:.3f}"
                out.detail = (f"judged score {s_new:.3f} vs the shipped cubin's {old}; it must beat that and the "
                              f"vendor by {cfg.library.serve_margin:.0%} in every mode")
                return out
        out.status, out.new_id = "published", ne.id
        return out
    finally:
        if own:
            worker.close()


def sass_entry(parent: Entry, r, sc: float, source: str, cubin: bytes, agent: dict, max_latency: int | None) -> Entry:
    """The library entry of a reordered cubin: the parent's shape, source, spec and build, this
    judge run's measurements, and provenance `sass` with what replays the schedule."""
    from cudal2.library import writer
    base = writer.entry_from(r, source, parent.family, parent.params, {}, sc, parent.build.get("nvcc", ""),
                             list(parent.build.get("flags", [])), list(parent.build.get("archs", [])))
    sha = manifest.sha256_bytes(cubin)
    eid = f"{r.M}x{r.N}x{r.K}-{parent.family}-sass-{sha[:10]}" if parent.m_range is None else \
        f"{parent.id}-sass-{sha[:10]}"
    provenance = {"kind": "sass", "parent": parent.id, "parent_device_sha256": parent.device_sha256,
                  "parent_provenance": parent.provenance, "agent": agent.get("agent"), "kernel": agent.get("kernel"),
                  "orders": agent.get("orders"), "gain": agent.get("gain"), "gain_repeat": agent.get("gain_repeat"),
                  "max_latency": max_latency, "stats": agent.get("stats")}
    return dataclasses.replace(base, id=eid, M=parent.M, m_range=parent.m_range, provenance=provenance,
                               source=parent.source, source_sha256=parent.source_sha256, device_sha256=sha,
                               build=dict(parent.build), binary=f"{eid}.cubin", spec=parent.spec)
