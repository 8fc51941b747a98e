"""`cudal2 generate`: wire the config, store, worker, proposers and library into the search engine.

Guarantees: the run's settings are the one `Config`; the device facts the priors use are read
from the worker's GPU; with no LLM configured the template proposer runs alone, and the run says
so in one line; with one, the LLM proposer gets `[llm] share` of each round, beside the templates
(one loop, two proposers); the exit code is 0 when every shape has a verified kernel, 1 otherwise.

`run_prebuild` is the GPU-free half: it admits each shape's next round to the run database as
pending candidates and builds them, so a CPU machine warms the build cache (`[build] cache_dir`)
and a GPU run of the same database only judges.

Does not: hold any search logic (see `engine.py`).
"""

from __future__ import annotations


from rich.console import Console
from rich.table import Table

from cudal2.config import Config
from cudal2.harness.evaluate import Evaluator
from cudal2.harness.store import Store
from cudal2.kernels import Limits, get_family
from cudal2.library import Library, folder
from cudal2.problem import Problem
from cudal2.search.engine import Search
from cudal2.llm.base import make_backend
from cudal2.retrieval import corpus
from cudal2.retrieval.index import Retriever
from cudal2.search.llm_proposer import LLMProposer
from cudal2.search.proposers import TemplateProposer


def run_prebuild(problems: list[Problem], cfg: Config, console: Console) -> int:
    """Admit each shape's next round (the template proposer, with the default H100 limits) to the
    population as pending candidates, and build them; a GPU run of the same config and run database
    judges them first. A shape with candidates already pending gets those built, no new round.
    Returns 0 when every build succeeded."""
    from cudal2.harness.build import build_all, cache_root
    from cudal2.report import plain
    store = Store(cfg.run.db)
    fams = [get_family(f) for f in cfg.search.families]
    # The evaluator's worker is never started: next_round only proposes.
    s = Search(cfg, store, Evaluator(cfg, store), [TemplateProposer(fams, Limits(), cfg.search.explore)],
               folder(cfg.library.root, "sm90"), console)
    sources: dict[str, None] = {}
    for p in problems:
        batch, _ = (None, 0) if s.pop.exhausted(p) else s.next_round(p)
        sources.update({src: None for _, src, _ in batch or []})
        if not batch:
            console.print(f"{p}: nothing to build (a budget is reached, or the search space ran dry)")
    console.print(f"--build-only: {len(sources)} pending sources for {len(problems)} shapes in {cfg.run.db} "
                  f"-> {cache_root(cfg.build)}")
    results = build_all(sources, cfg.build, console)
    failed = [r for r in results if not r.ok]
    for r in failed[:5]:
        console.print(f"[red]build failed[/] ({r.stage}): {plain(r.reason)}")
    console.print(f"{len(results) - len(failed)} built ({sum(r.cached for r in results)} already cached), {len(failed)} failed")
    return 1 if failed else 0


def run_generate(problems: list[Problem], cfg: Config, gpu: str, console: Console, missing_only: bool = False) -> int:
    store = Store(cfg.run.db)
    ev = Evaluator(cfg, store, gpu_name=gpu)
    try:
        o = ev.worker.run("cudal2.harness.judge:device_job")
        if not o.ok:
            console.print(f"[red]error:[/] cannot read the GPU: {o.error.splitlines()[0] if o.error else o.fault}")
            return 2
        d = o.value
        limits = Limits(sm_count=d["sm_count"], smem_per_block=d["smem_per_block_optin"], cc=tuple(d["cc"]))
        lib_dir = folder(cfg.library.root, f"sm{d['cc'][0]}{d['cc'][1]}")
        if missing_only:
            have = Library(lib_dir)
            skipped = [p for p in problems if have.lookup(p.M, p.N, p.K) is not None]
            problems = [p for p in problems if p not in skipped]
            console.print(f"--missing-only: {len(skipped)} shapes already in the library, {len(problems)} to search")
        fams = [get_family(f) for f in cfg.search.families]
        proposers = [TemplateProposer(fams, limits, cfg.search.explore)]
        llm = make_backend(cfg.llm)
        if llm is None:
            console.print(f"proposers: template ({', '.join(f.name for f in fams)}); no LLM configured (--llm or [llm] backend).")
        else:
            retriever = Retriever(corpus.build(lib_dir), cfg.llm.embedding_model)
            proposers[0].share = 1 - cfg.llm.share
            lp = LLMProposer(llm, cfg, store, gpu, d, retriever)
            lp.share = cfg.llm.share
            proposers.append(lp)
            console.print(f"proposers: template ({', '.join(f.name for f in fams)}) and LLM {llm.name} "
                          f"({cfg.llm.output_mode} files, {cfg.llm.samples} samples per prompt); trace: {cfg.llm.trace}")
        console.print(f"GPU: {d['name']} ({d['sm_count']} SMs). Results: {cfg.run.db}. Library: {lib_dir}")
        search = Search(cfg, store, ev, proposers, lib_dir, console)
        outcomes = search.run(problems)
    finally:
        ev.close()
    t = Table(title=f"cudal2 generate on {d['name']}: score = geomean over modes of speedup vs vendor_default")
    for c in ("shape", "evaluated", "verified", "best", "score", "library", "minutes", "failures by stage"):
        t.add_column(c)
    for x in outcomes:
        fails = ", ".join(f"{k}:{v}" for k, v in sorted(x.stages.items()) if k != "done")
        t.add_row(str(x.problem), str(x.evaluated), str(x.verified), x.best.name if x.best else "-",
                  f"{x.best.score:.3f}x" if x.best else "-", "updated" if x.published else "-",
                  f"{x.seconds / 60:.1f}", fails)
    console.print(t)
    return 0 if all(x.best for x in outcomes) else 1
