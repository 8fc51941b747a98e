"""Evaluate candidates: policy and build on every core, then judge on the GPU worker, then store.

Guarantees:
- this is the one path from source to `EvalResult`; the CLI, the search and the RL rewards all
  come through it;
- builds run in parallel while the GPU worker judges earlier candidates (one job at a time per
  GPU, so timings never share the device with another candidate);
- results are persisted as each arrives, keyed on everything that changes a verdict; a key
  already in the store is returned from it, not evaluated again (resume);
- a candidate that hangs, crashes or leaves a sticky CUDA error costs only itself: its result
  records the fault and the stage, and the worker is replaced;
- an exception inside the harness itself comes back as a failed result carrying its traceback,
  and is not stored, so a fixed harness re-judges that candidate on resume.

Does not: run candidate code in this process (only `worker.py` does).
"""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable

from cudal2.config import Config
from cudal2.harness.build import BuildResult, build, nvcc_version
from cudal2.harness.store import Store, source_hash
from cudal2.harness.worker import Worker
from cudal2.problem import Problem, ProblemError, parse_claim
from cudal2.result import EvalResult, Fault, Stage, Timing


@dataclass
class Candidate:
    name: str
    source: str


def result_key(source: str, p: Problem, cfg: Config, gpu: str, profile: bool = False, time_it: bool = True) -> str:
    parts = [source_hash(source), str(p), cfg.digest("build", "verify", "timing"), gpu, nvcc_version(cfg.build.nvcc),
             "profile" if profile else "", "" if time_it else "verify-only"]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]


def stored(store: Store, source: str, p: Problem, cfg: Config, gpu: str, profile: bool = False) -> EvalResult | None:
    """The result the store holds for `source` at `p` under this config and GPU, if any."""
    return store.get(result_key(source, p, cfg, gpu, profile))


class Evaluator:
    def __init__(self, cfg: Config, store: Store | None = None, worker: Worker | None = None, gpu_name: str = ""):
        self.cfg = cfg
        self.store = store
        self.worker = worker or Worker(cfg.run.gpu, cfg.run.job_timeout_s)
        self.gpu_name = gpu_name

    def close(self) -> None:
        self.worker.close()

    def evaluate(self, cands: Iterable[Candidate], p: Problem, profile: bool = False,
                 on_result: Callable[[EvalResult], None] | None = None, reuse: bool = True,
                 time_it: bool = True) -> list[EvalResult]:
        """One result per candidate, in order. With `reuse`, a result already stored under the same
        key is returned instead of measured again (that is how runs resume). Without `time_it`, the
        verification stages alone run."""
        cands = list(cands)
        out: list[EvalResult | None] = [None] * len(cands)
        todo: list[int] = []
        for i, c in enumerate(cands):
            hit = self.store.get(self._key(c, p, profile, time_it)) if self.store is not None and reuse else None
            if hit is not None:
                out[i] = hit
                on_result and on_result(hit)
            else:
                todo.append(i)
        with ThreadPoolExecutor(max_workers=self.cfg.build.jobs or None) as pool:
            builds: dict[int, Future[BuildResult]] = {i: pool.submit(build, cands[i].source, self.cfg.build) for i in todo}
            for i in todo:  # judge in submission order as builds finish: the GPU stays busy
                r = self._finish(cands[i], p, builds[i].result(), profile, time_it)
                if self.store is not None and "harness_traceback" not in r.checks:
                    # A harness bug is not the candidate's verdict: never store it as one.
                    self.store.put_source(cands[i].source)
                    self.store.put(self._key(cands[i], p, profile, time_it), r)
                out[i] = r
                on_result and on_result(r)
        return out  # type: ignore[return-value]

    def _key(self, c: Candidate, p: Problem, profile: bool, time_it: bool) -> str:
        return result_key(c.source, p, self.cfg, self.gpu_name, profile, time_it)

    def _finish(self, c: Candidate, p: Problem, b: BuildResult, profile: bool, time_it: bool) -> EvalResult:
        r = EvalResult(name=c.name, source_hash=source_hash(c.source), M=p.M, N=p.N, K=p.K)
        r.build = {k: v for k, v in b.to_dict().items() if k != "log"} | {"log_tail": b.log[-2000:]}
        if not b.ok:
            return r.fail(Stage(b.stage), b.reason)
        try:
            claim = parse_claim(c.source)
        except ProblemError as e:
            return r.fail(Stage.LOAD, str(e))
        if not claim.covers(p):
            return r.fail(Stage.LOAD, f"the kernel does not declare shape {p} (see its cudal2-shapes line)")
        shapes = [(s.M, s.N, s.K) for s in claim.verification_shapes(p)]
        t0 = time.monotonic()
        o = self.worker.run("cudal2.harness.judge:judge", b.lib_path, p.M, p.N, p.K, self.cfg, shapes, time_it)
        if o.ok:
            d = o.value
            r.stage, r.ok, r.reason = Stage(d["stage"]), d["ok"], d["reason"]
            r.fault = Fault(d["fault"]) if d["fault"] else None
            for k in ("checks", "speedup", "tflops", "floor_fraction", "gpu"):
                if k in d:
                    setattr(r, k, d[k])
            r.times = {m: {n: Timing(**t) for n, t in rs.items()} for m, rs in d.get("times", {}).items()}
        elif o.fault:
            stage = Stage(o.stage) if o.stage in Stage._value2member_map_ else Stage.LOAD
            r.fail(stage, o.error, o.fault)
        else:
            r.fail(Stage.LOAD, f"harness error: {o.error.splitlines()[0]}")
            r.checks["harness_traceback"] = o.error
        if profile and r.ok:
            r.profile = self._profile(b.lib_path, p)
        r.elapsed_s = time.monotonic() - t0 + b.seconds
        return r

    def _profile(self, lib: str, p: Problem) -> dict:
        from cudal2.harness.profile import ProfileError, profile
        try:
            return profile(lib, p.M, p.N, p.K, self.cfg.timing.profile_metrics)
        except (ProfileError, FileNotFoundError) as e:
            return {"error": str(e)[:2000]}
