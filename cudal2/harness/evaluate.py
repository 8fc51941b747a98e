"""Evaluate candidates: policy and build on every core, then judge on the GPU worker, then store.

Guarantees:
- this is the one path from source to `EvalResult`; the CLI, the search and the RL rewards all
  come through it;
- builds run in parallel while the GPU worker judges earlier candidates (one job at a time per
  GPU, so timings never share the device with another candidate);
- results are persisted as each arrives, keyed on everything that changes a verdict (the judging
  code's version included: `judge_version`); a key
  already in the store is returned from it, not evaluated again (resume);
- a candidate that hangs, crashes or leaves a sticky CUDA error costs only itself: its result
  records the fault and the stage, and the worker is replaced;
- an exception inside the harness itself comes back as a failed result carrying its traceback,
  and is not stored, so a fixed harness re-judges that candidate on resume; nor is a build the
  machine failed (`BuildResult.infra`: the compiler's sandbox did not start);
- a candidate's trust decides its contract before anything is built (`trust.refusal`): an
  untrusted v1 file never compiles;
- the judge receives an artifact (the built binary, its kind and launch spec), never a source;
  M-range claims are verified at M values drawn afresh for every evaluation;
- a verified score far above the best known for the shape is judged again in a fresh worker
  process (`_rejudge`); the lower score counts, and a failure there fails the candidate.

Does not: run candidate code in this process (only `worker.py` does).
"""

from __future__ import annotations

import functools
import hashlib
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable

from cudal2.config import Config
from cudal2.harness import trust
from cudal2.harness.build import BuildResult, build, nvcc_version, sandbox_state
from cudal2.harness.artifact import JudgeRequest
from cudal2.harness.launch import LaunchSpec
from cudal2.harness.store import Store, source_hash
from cudal2.harness.worker import Worker
from cudal2.problem import Problem, ProblemError, ShapeClaim, parse_claim
from cudal2.result import EvalResult, Fault, Stage, Timing
from cudal2.search.score import score


@dataclass
class Candidate:
    name: str
    source: str
    trust: str = "untrusted"                 # see harness/trust.py
    provenance: dict = field(default_factory=dict)   # "template": {"family", "params"}

    @classmethod
    def made_by(cls, name: str, source: str, proposer: str, family: str, params: dict) -> "Candidate":
        """A candidate with the trust its maker earns: template renders are re-checked as such."""
        if proposer == "template":
            return cls(name, source, "template", {"family": family, "params": dict(params)})
        return cls(name, source)

    @classmethod
    def of_entry(cls, e, source: str) -> "Candidate":
        """A library entry (`manifest.Entry`) as a candidate, trusted as what its provenance says it is."""
        return cls.made_by(e.id, source, e.provenance.get("kind", ""), e.family, e.params)


@functools.cache
def judge_version() -> str:
    """A hash of the code that reaches a verdict: the harness's modules (the judge, its guards,
    timing, comparisons, loader, trust), the shapes' verification rules (`problem`) and the build's
    rules (`build.rules_version`). A stored verdict is reused only under the code that reached it:
    a judge fixed after a cheat was stored as verified judges that source again (review 42: the
    key named the config and toolkit but not the rules, so a resumed run found the stale verdict
    before building, and `search.confirm = false` published it)."""
    from pathlib import Path

    import cudal2.problem
    from cudal2.harness.build import rules_version
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")) + [Path(cudal2.problem.__file__)]:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    h.update(rules_version().encode())
    return h.hexdigest()[:16]


def result_key(source: str, p: Problem, cfg: Config, gpu: str, profile: bool = False, time_it: bool = True) -> str:
    # The compiler's sandbox state too, as in the build's own key: a verdict reached where the build
    # ran open (build.sandbox 'auto' on a machine without user namespaces) was reused from the
    # results db where the compiler is sandboxed (review 51)
    parts = [source_hash(source), str(p), cfg.digest("build", "verify", "timing"), gpu, nvcc_version(cfg.build.nvcc),
             "profile" if profile else "", "" if time_it else "verify-only", judge_version(),
             sandbox_state(cfg.build)[0]]
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
        self._lib_entries: list | None = None

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
            refused = {i: trust.refusal(cands[i].source, cands[i].trust, cands[i].provenance, p) for i in todo}
            builds: dict[int, Future[BuildResult]] = {i: pool.submit(build, cands[i].source, self.cfg.build)
                                                      for i in todo if refused[i] is None}
            for i in todo:  # judge in submission order as builds finish: the GPU stays busy
                b = builds[i].result() if i in builds else BuildResult(False, "", "policy", reason=f"policy: {refused[i]}")
                r = self._finish(cands[i], p, b, profile, time_it)
                if self.store is not None and "harness_traceback" not in r.checks and not b.infra:
                    # A harness bug is not the candidate's verdict: never store it as one; nor a
                    # build the machine failed (its sandbox did not start; review 52).
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
        try:   # the claim is the candidate's text: any shape it leads to that is not a Problem is its
            claim = parse_claim(c.source)   # failure, never an exception out of evaluate (review 39)
            if not claim.covers(p):
                return r.fail(Stage.LOAD, f"the kernel does not declare shape {p} (see its cudal2-shapes line)")
            tiles = LaunchSpec.from_dict(b.spec).m_tiles if b.spec else [128]
            full, light = claim.verification_shapes(p, tiles)
        except ProblemError as e:
            return r.fail(Stage.LOAD, str(e))
        req = JudgeRequest(b.lib_path, b.kind, b.spec, p.M, p.N, p.K, self.cfg, [(s.M, s.N, s.K) for s in full],
                           [(s.M, s.N, s.K) for s in light], time_it)
        t0 = time.monotonic()
        self._judge_confirmed(r, req, p)
        if profile and r.ok:
            r.profile = self._profile(b.lib_path, p)
        r.elapsed_s = time.monotonic() - t0 + b.seconds
        return r

    def judge_cubin(self, path, name: str, spec: dict, source: str, p: Problem, time_it: bool = True,
                    claim: ShapeClaim | None = None) -> EvalResult:
        """The build's rules on an already built cubin (`build.binary_violations`: a failure there is
        stage build), then the judge's verification stages (and timing) at `p`, the shapes drawn
        from `claim` (a library entry's: `Entry.claim`, the M it is served at), else from the claim in
        `source` as for a search candidate: how `cudal2 sass` judges a reordered cubin and `cudal2
        library verify` / `bench --kernel` the binary a library ships, which a user runs (a rebuild
        from source may differ: another toolkit, or a reordered schedule). An entry's coverage, not
        its source's claim: an M-range entry whose source claimed one shape, or none, was verified at
        its top M alone and served at every M of its range (review 45)."""
        from pathlib import Path

        from cudal2.harness.build import binary_violations
        from cudal2.library.manifest import sha256_file
        r = EvalResult(name=name, source_hash=source_hash(source), M=p.M, N=p.N, K=p.K)
        r.build = {"kind": "cubin", "spec": spec, "device_sha256": sha256_file(Path(path))}
        try:
            ls, claim = LaunchSpec.from_dict(spec), claim or parse_claim(source)
            if not claim.covers(p):
                return r.fail(Stage.LOAD, f"the kernel does not declare shape {p} (see its cudal2-shapes line)")
            full, light = claim.verification_shapes(p, ls.m_tiles)
        except (ProblemError, ValueError) as e:   # SpecError is a ValueError
            return r.fail(Stage.LOAD, str(e))
        if bad := binary_violations(Path(path), ls):
            return r.fail(Stage.BUILD, "; ".join(bad))
        req = JudgeRequest(str(path), "cubin", spec, p.M, p.N, p.K, self.cfg, [(q.M, q.N, q.K) for q in full],
                           [(q.M, q.N, q.K) for q in light], time_it)
        self._judge_confirmed(r, req, p)
        return r

    def _judge_confirmed(self, r: EvalResult, req: JudgeRequest, p: Problem) -> None:
        """`judge_request` on this evaluator's worker; a timed score far above the best known for
        `p` is judged again in a fresh process (`_rejudge`), for a built source and a cubin alike
        (a lucky timing of a shipped cubin would otherwise decide what `library bench --update` serves)."""
        self.judge_request(r, self.worker, req)
        if r.ok and req.time_it and self._implausible(r, p):
            self._rejudge(r, req)

    def judge_request(self, r: EvalResult, worker: Worker, req: JudgeRequest) -> None:
        """Run the judge job for `req` on `worker` (an already built artifact) and copy its verdict
        into `r`: the one way from a request to a verdict, for callers that built the artifact
        themselves (`cudal2 sass` judges reordered cubins)."""
        o = worker.run("cudal2.harness.judge:judge", req)
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

    def best_known(self, p: Problem, exclude: str) -> float | None:
        """The best score on record for `p`: stored verified results of other sources, the library's entry."""
        known = []
        if self.store is not None:
            known += [score(x) for x in self.store.results(p.M, p.N, p.K) if x.ok and x.source_hash != exclude]
        known += [e.score for e in self._library() if e.covers(p.M, p.N, p.K)]
        known = [x for x in known if x]
        return max(known) if known else None

    def _library(self) -> list:
        """The library's entries, read once per evaluator (no library here: none)."""
        if self._lib_entries is None:
            try:
                from cudal2.library import folder, manifest
                self._lib_entries = manifest.read(folder(self.cfg.library.root or None))
            except Exception:
                self._lib_entries = []
        return self._lib_entries

    def _implausible(self, r: EvalResult, p: Problem) -> bool:
        sc, best = score(r), self.best_known(p, r.source_hash)
        if sc is None:
            return False
        return sc > (best * self.cfg.verify.rejudge_factor if best else self.cfg.verify.rejudge_above)

    def _rejudge(self, r: EvalResult, req: JudgeRequest) -> None:
        """Judge again in a fresh process (fresh allocations), with positive-mean timing inputs and a
        new runner order; keep the lower score's timings, fail on any failure."""
        first = score(r)
        again = EvalResult(name=r.name, source_hash=r.source_hash, M=r.M, N=r.N, K=r.K)
        with Worker(self.cfg.run.gpu, self.cfg.run.job_timeout_s) as fresh:
            self.judge_request(again, fresh, JudgeRequest(**{**req.__dict__, "rejudge": True}))
        r.checks["rejudge"] = {"first_score": first, "second_score": score(again), "stage": again.stage.value,
                               "reason": again.reason}
        if "harness_traceback" in again.checks:  # the harness's failure, not a verdict: never stored as one
            r.checks["harness_traceback"] = again.checks["harness_traceback"]
        if not again.ok:
            r.fail(again.stage, f"re-judged (score {first:.2f} was implausible): {again.reason}", again.fault)
        elif score(again) < first:
            r.times, r.speedup, r.tflops, r.floor_fraction = again.times, again.speedup, again.tflops, again.floor_fraction

    def _profile(self, lib: str, p: Problem) -> dict:
        from cudal2.harness.profile import ProfileError, profile
        try:
            return profile(lib, p.M, p.N, p.K, self.cfg.timing.profile_metrics)
        except (ProfileError, FileNotFoundError) as e:
            return {"error": str(e)[:2000]}
