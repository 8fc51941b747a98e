"""The search loop, one engine for every proposer: propose, dedupe, evaluate, remember, publish.

Guarantees:
- each round asks every proposer for its share of `search.batch` candidates, drops sources the
  population already holds for the shape, and evaluates the rest through the harness (builds on
  every core, judging on the GPU worker); a proposer that returns garbage costs only its
  candidates (they fail at policy or build);
- everything is persisted as it happens (results store, population, elapsed time per shape), so a
  killed run resumes: pending candidates (admitted, not yet judged) are judged first, whatever the
  budgets, and the time, candidate and round budgets count what earlier runs spent; a shape whose
  proposers ran dry is marked exhausted and skipped, while one that stopped at a budget goes on when
  a later run raises that budget;
- budgets: minutes, candidates and rounds per shape, and an optional target score;
- `next_round` is the proposing half alone (no GPU): `cudal2 generate --build-only` admits a round
  as pending candidates and builds them, and the GPU run that resumes the population judges them;
- the best verified candidate of each shape is offered to the library, which keeps the better; with
  `search.confirm` (the default) the best is first measured afresh beside the library's entry for
  the shape, and both fresh scores decide (the search's own best score is biased high: it is the
  maximum over many short measurements).

Does not: write sources itself (proposers do) or decide verdicts (the harness does).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cudal2.config import Config
from cudal2.harness.build import nvcc_version
from cudal2.harness.evaluate import Candidate, Evaluator, stored
from cudal2.harness.store import Store
from cudal2.library import manifest, writer
from cudal2.problem import Problem
from cudal2.result import EvalResult, Stage
from cudal2.search import trace
from cudal2.search.population import Member, Population
from cudal2.search.proposers import Proposal, Proposer
from cudal2.search.score import score


@dataclass
class ShapeOutcome:
    problem: Problem
    evaluated: int = 0
    verified: int = 0
    best: Member | None = None
    published: bool = False
    seconds: float = 0.0
    stages: dict[str, int] = field(default_factory=dict)


class Search:
    def __init__(self, cfg: Config, store: Store, evaluator: Evaluator, proposers: list[Proposer],
                 library_dir: Path, console: Console | None = None):
        self.cfg, self.store, self.ev, self.proposers = cfg, store, evaluator, proposers
        self.pop = Population(cfg.run.db)
        self.library_dir = library_dir
        self.console = console or Console()
        self.rng = random.Random(cfg.search.seed)

    def run(self, problems: list[Problem]) -> list[ShapeOutcome]:
        outcomes = []
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=self.console, transient=False) as bar:
            shapes = bar.add_task("shapes", total=len(problems))
            for p in problems:
                if self.pop.exhausted(p):
                    self.console.print(f"{p}: its search space ran dry in an earlier run; skipped")
                    outcomes.append(self._outcome(p))
                else:
                    outcomes.append(self.run_shape(p, bar))
                bar.advance(shapes)
        return outcomes

    def run_shape(self, p: Problem, bar: Progress) -> ShapeOutcome:
        task = bar.add_task(str(p), total=self.cfg.search.max_candidates)
        start, spent_before = time.monotonic(), self.pop.elapsed(p)
        exhausted = False
        while True:
            bar.update(task, completed=len(self.pop.members(p, "done")), description=self._describe(p))
            batch, judged = self.next_round(p, spent_before + time.monotonic() - start)
            if batch is None:
                break
            if not batch and not judged:  # every proposer came back empty-handed or with duplicates
                exhausted = True
                break
            t0 = time.monotonic()
            results = self.ev.evaluate([self._candidate(m, src) for m, src, _ in batch], p,
                                       on_result=lambda r: bar.advance(task))
            for (m, _, meta), r in zip(batch, results):
                sc = score(r)
                self.pop.record(m.id, r.ok, r.stage.value, sc, r.reason)
                if "completion" in meta:
                    trace.append(self.cfg.llm.trace, trace.line(p, meta, m.id, m.parent, r, r.stage.value, r.reason, sc))
            self._profile_best(p)
            self.pop.add_elapsed(p, time.monotonic() - t0)
        if exhausted:
            self.pop.mark_exhausted(p)
        out = self._outcome(p)
        out.published = self._publish(p, out.best)
        bar.update(task, description=self._describe(p) + (" -> library" if out.published else "")
                   + (" (space exhausted)" if exhausted else ""))
        return out

    def next_round(self, p: Problem, spent_s: float | None = None
                   ) -> tuple[list[tuple[Member, str, dict]] | None, int]:
        """The candidates to judge next, and how many were judged on the spot (parse failures): the
        pending ones if any, else a new round admitted to the population; (None, 0) once a budget is
        reached. `spent_s` defaults to the search time the population has recorded."""
        pending = self._pending(p)
        if pending:
            return pending, 0
        s = self.cfg.search
        done = self.pop.members(p, "done")
        spent = self.pop.elapsed(p) if spent_s is None else spent_s
        rounds = self.pop.last_round(p)
        best = self.pop.best(p)
        if (spent > s.budget_minutes * 60 or len(done) >= s.max_candidates
                or (s.max_rounds and rounds >= s.max_rounds)
                or (s.target_speedup and best and best[0].score >= s.target_speedup)):
            return None, 0
        return self._propose(p, min(s.batch, s.max_candidates - len(done)), rounds + 1)

    def _pending(self, p: Problem) -> list[tuple[Member, str, dict]]:
        """Candidates a killed run had admitted but not judged: first in line on resume."""
        found = [(m, self.store.source(m.source_hash), self.pop.meta(m.id)) for m in self.pop.members(p, "pending")]
        return [(m, src, meta) for m, src, meta in found if src is not None]

    def _propose(self, p: Problem, n: int, round_: int) -> tuple[list[tuple[Member, str, dict]], int]:
        """New candidates to judge, and how many were judged on the spot (parse failures)."""
        batch, judged = [], 0
        for prop in self.proposers:
            share = getattr(prop, "share", None) or 1 / len(self.proposers)
            try:
                proposals: list[Proposal] = prop.propose(p, self.pop, max(1, round(n * share)), self.rng)
            except Exception as e:  # noqa: BLE001  a broken proposer costs its share of the round
                self.console.print(f"[yellow]proposer {prop.name} failed: {e}[/]")
                continue
            for x in proposals:
                if "parse_error" in x.meta:  # judged here and now: fed back in the next prompt
                    judged += self._parse_failure(p, x, round_)
                    continue
                if not isinstance(x.source, str) or not x.source.strip():
                    continue
                h = self.store.put_source(x.source)
                mid = self.pop.add(p, x.name, x.source, h, x.family, x.params, x.parent, x.proposer, round_, x.meta)
                if mid is not None:
                    batch.append((self.pop.member(mid), x.source, x.meta))
        return batch, judged

    def _parse_failure(self, p: Problem, x: Proposal, round_: int) -> bool:
        """Record an unparseable completion (once per distinct text) and trace it (always)."""
        text = x.meta.get("completion", "")
        mid = self.pop.add(p, x.name, text, self.store.put_source(text), x.family, {}, x.parent, x.proposer, round_,
                           x.meta)
        if mid is not None:
            self.pop.record(mid, False, Stage.PARSE.value, None, x.meta["parse_error"])
        trace.append(self.cfg.llm.trace, trace.line(p, x.meta, mid or -1, x.parent, None, Stage.PARSE.value,
                                                    x.meta["parse_error"], None))
        return mid is not None

    def _profile_best(self, p: Problem) -> None:
        """Nsight Compute metrics of the current best, once per best, for proposers that show them
        to the model (the LLM's contrastive feedback)."""
        if not any(getattr(x, "wants_profile", False) for x in self.proposers):
            return
        best = self.pop.best(p)
        src = self.store.source(best[0].source_hash) if best else None
        if src and stored(self.store, src, p, self.cfg, self.ev.gpu_name, profile=True) is None:
            self.ev.evaluate([self._candidate(best[0], src)], p, profile=True)

    def _describe(self, p: Problem) -> str:
        best = self.pop.best(p)
        return f"{p}: best " + (f"{best[0].score:.3f}x ({best[0].name})" if best else "none yet")

    def _outcome(self, p: Problem) -> ShapeOutcome:
        ms = self.pop.members(p, "done")
        out = ShapeOutcome(p, evaluated=len(ms), verified=sum(bool(m.ok) for m in ms), seconds=self.pop.elapsed(p))
        for m in ms:
            out.stages[m.stage] = out.stages.get(m.stage, 0) + 1
        best = self.pop.best(p)
        out.best = best[0] if best else None
        return out

    def _publish(self, p: Problem, best: Member | None) -> bool:
        if best is None:
            return False
        source = self.store.source(best.source_hash)
        r = stored(self.store, source, p, self.cfg, self.ev.gpu_name)
        if r is None or not r.ok:
            return False
        if r.build.get("kind") != "cubin":
            self.console.print(f"{p}: {best.name} is contract v1 host code (family {best.family}): the library holds "
                               "contract v2 entries only, so it is not published")
            return False
        old = [e for e in manifest.read(self.library_dir) if e.m_range is None and (e.M, e.N, e.K) == (p.M, p.N, p.K)]
        if any(e.source_sha256 == manifest.sha256_text(source) for e in old):
            return False  # already the library's entry (a resumed or repeated run)
        sc, rescored = best.score, {}
        if self.cfg.search.confirm:
            r, sc, rescored = self._confirm(p, best, source, old)
            if sc is None:
                return False
        provenance = {"kind": best.proposer, "candidate": best.name}
        meta = self.pop.meta(best.id)
        if "model" in meta:
            provenance.update(model=meta["model"], prompt_hash=meta.get("prompt_hash", ""), output_mode=meta.get("output_mode"))
        e = writer.entry_from(r, source, best.family, best.params, provenance, sc, nvcc_version(self.cfg.build.nvcc),
                              self.cfg.build.flags, self.cfg.build.archs)
        margin = self.cfg.library.serve_margin
        if not e.publishable(margin):
            self.console.print(f"{p}: {best.name} measured afresh at {e.layout_speedups()} against the vendor on its "
                               f"operands: slower in a mode, or faster by {margin:.0%} in none, so not published")
            return False
        added = writer.add(self.library_dir, e, source, rescored, binary=r.build.get("lib_path"), margin=margin)
        if added and not e.wins(margin):
            self.console.print(f"{p}: {best.name} published (against cuBLAS NN on a transposed B it measured "
                               f"{e.speedups()}); served once `cudal2 library bench --update --new` measures it "
                               "against F.linear")
        return added

    def _candidate(self, m: Member, source: str) -> Candidate:
        return Candidate.made_by(m.name, source, m.proposer, m.family, m.params)

    def _confirm(self, p: Problem, best: Member, source: str, old: list[manifest.Entry]
                 ) -> tuple[EvalResult, float | None, dict[str, float]]:
        """The best candidate measured afresh, beside the library's entries `old` for the shape. The
        search's score of its best is the highest of many short measurements, so it runs high (the
        winner's curse); a fresh one is not selected on and compares fairly with the entry's."""
        cands = [self._candidate(best, source)] + [Candidate.of_entry(e, (self.library_dir / e.source).read_text())
                                                   for e in old]
        fresh = self.ev.evaluate(cands, p, reuse=False)
        # An entry that fails now (or no longer builds here) scores 0: any verified candidate replaces it.
        return fresh[0], score(fresh[0]), {e.id: score(f) or 0.0 for e, f in zip(old, fresh[1:])}

