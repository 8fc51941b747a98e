"""Rewards as a service: completions in, one `RewardParts` each out, computed by the judge.

Guarantees:
- each completion is parsed as `generate` parses a full-file completion (a parse error gets the
  floor, with the parser's reason); sources are untrusted, so the judge's contract v2 applies;
- a batch is deduplicated by (source hash, target), and verdicts are cached across batches: the
  same kernel for the same target is judged once; an infrastructure fault (no reward: no GPU, the
  harness's error, a build whose sandbox did not start) is not a verdict and is judged again; a
  target is an HGEMM shape (the GEMM judge, speedup = its score) or a general task id (the task
  judge, `harness.task_judge`, speedup against the torch reference);
- builds run in parallel on every core; with a GPU, judging runs in the harness's worker
  process (`Evaluator`), never in the caller's (the trainer's) process; without one, the reward
  stops at the build and says so: a build failure gets the floor, a kernel that built gets None
  ("no GPU here to judge on"), because compiling earns nothing and cannot be judged here.

Does not: shape rewards (see `reward.py`) or talk to TRL (see `trl_reward.py`).
"""

from __future__ import annotations

from cudal2.config import Config
from cudal2.harness.build import build_many
from cudal2.harness.store import source_hash
from cudal2.llm.parse import ParseError, candidate_source
from cudal2.problem import Problem
from cudal2.result import Stage
from cudal2.rl.reward import RewardParts, from_result, shape

NO_GPU = "stopped at build: no GPU here to judge on"


class RewardService:
    def __init__(self, cfg: Config, gpu: bool | None = None):
        from cudal2.harness.device import gpu_present
        self.cfg = cfg
        self.gpu = (gpu_present() is None) if gpu is None else gpu
        self._ev = None
        self._tw = None   # the task judge's worker
        self.cache: dict[tuple[str, Problem | str], RewardParts] = {}
        self.judged = 0   # distinct (source, shape) pairs judged or built so far

    def evaluator(self):
        if self._ev is None:
            from cudal2.harness.evaluate import Evaluator
            self._ev = Evaluator(self.cfg)
        return self._ev

    def close(self) -> None:
        if self._ev is not None:
            self._ev.close()
            self._ev = None
        if self._tw is not None:
            self._tw.close()
            self._tw = None

    def task_worker(self):
        if self._tw is None:
            from cudal2.harness.worker import Worker
            self._tw = Worker()
        return self._tw

    def score(self, completions: list[str], problems: list[Problem | str]) -> list[RewardParts]:
        T = self.cfg.train
        out: list[RewardParts | None] = [None] * len(completions)
        todo: dict[tuple[str, Problem], tuple[str, list[int]]] = {}
        for i, (text, p) in enumerate(zip(completions, problems)):
            try:
                src = candidate_source(text, "full", None)
            except ParseError as e:
                out[i] = shape(T, Stage.PARSE.value, False, reason=str(e))
                continue
            key = (source_hash(src), p)
            if key in self.cache:
                out[i] = self.cache[key]
            else:
                todo.setdefault(key, (src, []))[1].append(i)
        if todo:
            keys = list(todo)
            for key, parts in zip(keys, self._judge([(todo[k][0], k[1]) for k in keys])):
                if parts.reward is not None:   # an infrastructure fault is the machine's, for now only
                    self.cache[key] = parts
                for i in todo[key][1]:
                    out[i] = parts
            self.judged += len(keys)
        return out  # type: ignore[return-value]

    def _judge(self, jobs: list[tuple[str, Problem | str]]) -> list[RewardParts]:
        T = self.cfg.train
        builds = build_many([src for src, _ in jobs], self.cfg.build)
        out: list[RewardParts] = []
        for (src, p), b in zip(jobs, builds):
            if not b.ok:   # the floor, unless the machine failed it (its sandbox did not start; review 52)
                out.append(shape(T, b.stage, False, infra=b.infra, reason=b.reason))
            elif not self.gpu:
                out.append(shape(T, Stage.BUILD.value, True, infra=True, reason=NO_GPU))
            elif isinstance(p, str):
                out.append(self._judge_task(src, p))
            else:
                from cudal2.harness.evaluate import Candidate
                (r,) = self.evaluator().evaluate([Candidate(f"rl-{source_hash(src)[:10]}", src)], p,
                                                 profile=T.ncu_weight > 0, reuse=False)
                out.append(from_result(T, r))
        return out

    def _judge_task(self, src: str, task_id: str) -> RewardParts:
        """A general task's reward: the task judge's verdict; the speedup is against the faster of
        the torch reference and (when timed) its torch.compile."""
        from cudal2.harness.task_judge import evaluate_task
        T = self.cfg.train
        r = evaluate_task(src, task_id, self.cfg, self.task_worker())
        if not r.get("ok"):
            return shape(T, r.get("stage", "worker"), False, infra=bool(r.get("infra")), reason=r.get("reason", ""))
        return shape(T, Stage.DONE.value, True, speedup=min(r["speedup"].values()))
