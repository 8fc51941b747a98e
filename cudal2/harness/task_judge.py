"""The judge for the general task suite (stage `general`): the GEMM judge's staged checks, for
any task of `cudal2.rl.general`, run in a worker.

Guarantees (`judge_task`, a worker job; `evaluate_task` builds and runs it from the host):
- the candidate is a contract-v2 cubin whose launch spec names the task; it is loaded by the one
  loader (`module.Module`) and refused if a kernel needs more than `guards.LOCAL_BYTES` of local
  memory per thread;
- every buffer it can address (the task's inputs and outputs, its workspace) is a region of an
  arena (`buffers.Arena`: random layout, checked random background);
- verification: at the task's sizes and (unless the caller names sizes) one trial more at
  `general.tail_sizes` (odd, smaller: a kernel specialized to one size fails there); for each
  trial, fresh inputs from a new seed, outputs and workspace poisoned with random finite values,
  the chip scrubbed and free pool blocks unmapped, one call; then the inputs are bitwise what
  their seed gives (regenerated, no copy kept), the arena's background is intact, and every output meets the task's tolerance against the task's torch reference
  ('exact': bitwise; 'relative': |out - ref| <= 2^-9 |ref| + 2^-12 rms(ref) + 2^-24 for 16-bit
  outputs, 2^-14 |ref| + 2^-14 rms(ref) for f32); a repeat with the same inputs must give bitwise the same outputs;
- timing: CUDA graphs over input sets larger than twice the L2, the candidate against the torch
  reference (eager kernels, captured) and, when asked, `torch.compile` of it; before every replay,
  untimed, fresh inputs, poisoned outputs, a scrub and an L2 flush;
  after every candidate replay, every set's outputs checked in full, every input regenerated and
  compared, the background checked, and the replay's snapshots (`snapshots`: outputs sampled the
  moment each call ended) compared with the final outputs; then one more replay on the same
  inputs must reproduce every output bit for bit; speedups are medians of per-round paired
  ratios;
- a hang, a CUDA error or an exception of the judge's ends the worker process after its answer
  (`worker.request_exit`): no later candidate is judged in a broken context or behind a kernel
  that still runs; otherwise the candidate's module is unloaded before the next job.

Does not: profile, or rejudge a surprising score (the GEMM judge's extras); a task with a
reference that torch cannot capture in a graph is timed without one (recorded).
"""

from __future__ import annotations

import math
import random
import secrets
import time

from cudal2.config import Config

# bytes per element -> (of |ref|, of rms(ref), absolute): the absolute part is one fp16 subnormal
# step, which an exact answer rounded to fp16 can already miss by (a softmax over 2^18 columns).
TOL = {2: (2.0 ** -9, 2.0 ** -12, 2.0 ** -24), 4: (2.0 ** -14, 2.0 ** -14, 0.0)}


class TaskFailed(Exception):
    """A verdict. `fault`: a hang or CUDA error, after which the worker's context is unusable (a
    sticky error) or still runs the candidate's kernel (a hang): its process must be replaced."""

    def __init__(self, stage: str, reason: str, fault: bool = False):
        super().__init__(reason)
        self.stage, self.reason, self.fault = stage, reason, fault


def _dtype(name: str):
    import torch
    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "i32": torch.int32,
            "i64": torch.int64}[name]


def _views(arena, first: int, bufs, sizes) -> dict:
    """torch views of arena regions first.. for `bufs` (reinterpreted from bytes, no copy)."""
    import torch
    out = {}
    for j, b in enumerate(bufs):
        raw = torch.from_dlpack(arena.view(first + j, "uint8", (arena.sizes[first + j],)))
        out[b.name] = raw.view(_dtype(b.dtype)).view(tuple(sizes[d] for d in b.shape))
    return out


def within(out, ref, kind: str) -> tuple[bool, str]:
    """The task's tolerance rule; (ok, what was wrong)."""
    import torch
    if kind == "exact" or not out.is_floating_point():
        bad = int((out.view(-1) != ref.view(-1)).sum()) if out.dtype == ref.dtype else out.numel()
        return bad == 0, f"{bad} of {out.numel()} outputs differ from the reference"
    o, r = out.double(), ref.double()
    if not bool(torch.isfinite(o).all()):
        return False, f"{int((~torch.isfinite(o)).sum())} outputs are NaN/Inf"
    rel, of_rms, floor = TOL[out.element_size() if out.element_size() in TOL else 2]
    rms = float(r.square().mean().sqrt())
    excess = (o - r).abs() - (rel * r.abs() + of_rms * rms + floor)
    bad = int((excess > 0).sum())
    return bad == 0, f"{bad} of {out.numel()} outputs outside the tolerance (worst by {float(excess.max()):.3g})"


class _Setup:
    """The task's buffers (and a workspace) for `nsets` sets in one arena, and how to refill them."""

    def __init__(self, task, sizes, ws_bytes: int, nsets: int, gap: int):
        from cudal2.harness import buffers
        self.task, self.sizes, self.ws_bytes, self.n = task, sizes, ws_bytes, nsets
        self.bufs = list(task.inputs) + list(task.outputs)
        per = [math.prod(sizes[d] for d in b.shape) * _dtype(b.dtype).itemsize for b in self.bufs] + [ws_bytes]
        self.arena = buffers.Arena(per * nsets, gap)
        k = len(per)
        self.sets = [_views(self.arena, i * k, self.bufs, sizes) for i in range(nsets)]
        self.ws = [self.arena.ptr(i * k + k - 1) for i in range(nsets)]
        self.seeds = [0] * nsets
        self._gen = None
        self.names = [f"{([b.name for b in self.bufs] + ['the workspace'])[j % k]} of set {j // k}"
                      for j in range(k * nsets)]

    def fill(self, i: int, inputs: bool = True) -> None:
        """Set i: fresh inputs from a new seed (`inputs`; else the same inputs again), outputs and
        workspace poisoned (finite, random)."""
        import torch
        if inputs:
            self.seeds[i] = random.getrandbits(62)
        for name, x in self._draw(i).items():
            self.sets[i][name].copy_(x)
        for b in self.task.outputs:
            y = self.sets[i][b.name]
            if y.is_floating_point():
                y.copy_(torch.randn(y.shape, device=y.device, generator=self._poison()) * 4)
            else:
                y.copy_(torch.randint(-2**30, 2**30, y.shape, device=y.device, dtype=y.dtype, generator=self._poison()))
        if self.ws_bytes:
            k = len(self.bufs) + 1
            w = torch.from_dlpack(self.arena.view(i * k + k - 1, "uint8", (self.ws_bytes,)))
            w.copy_(torch.randint(0, 256, w.shape, device=w.device, dtype=torch.uint8, generator=self._poison()))

    def _poison(self):
        """A generator for the poison, seeded from the OS: torch's default one starts from a fixed
        seed in every process, so its draws could be known in advance."""
        import torch
        if self._gen is None:
            self._gen = torch.Generator(device="cuda").manual_seed(secrets.randbits(62))
        return self._gen

    def _draw(self, i: int) -> dict:
        import torch

        from cudal2.rl.general import inputs
        g = torch.Generator(device="cuda").manual_seed(self.seeds[i])
        return inputs(self.task, self.sizes, generator=g, device="cuda")

    def inputs_intact(self, i: int) -> bool:
        return all(bool((self.sets[i][n].view(-1) == x.view(-1)).all()) for n, x in self._draw(i).items())

    def check_outputs(self, i: int) -> tuple[bool, str]:
        """Set i's outputs against the reference on its inputs (regenerated)."""
        ref = self.task.reference(**self._draw(i))
        for b, r in zip(self.task.outputs, ref):
            ok, why = within(self.sets[i][b.name], r, self.task.tolerance.kind)
            if not ok:
                return False, f"{b.name}: {why}"
        return True, ""

    def args(self, i: int) -> dict[str, int]:
        return {n: t.data_ptr() for n, t in self.sets[i].items()}


def judge_task(binary: str, spec: dict, task_id: str, cfg: Config, sizes: dict | None = None,
               time_it: bool = True, with_compile: bool = False) -> dict:
    """Worker job: the verdict for one candidate of one task (a JSON-safe dict). After a hang, a
    CUDA error or any exception of the judge's, the worker is asked to leave (`request_exit`), as
    the GEMM judge does: a sticky error or a kernel still spinning would otherwise decide the
    verdicts of every later candidate judged in this process. The candidate's module is unloaded
    unless it faulted (a module whose kernel may still run is left to the dying process)."""
    from cudal2.harness.worker import request_exit
    held: list = []
    try:
        out = _judge(binary, spec, task_id, cfg, sizes, time_it, with_compile, held)
    except TaskFailed as f:
        if f.fault:
            request_exit()
        else:
            _unload(held)
        return {"ok": False, "stage": f.stage, "reason": f.reason, "task": task_id}
    except BaseException:
        request_exit()
        raise
    _unload(held)
    return out


def _unload(held: list) -> None:
    for mod in held:
        mod.close()


def _judge(binary, spec_dict, task_id, cfg, sizes, time_it, with_compile, held: list) -> dict:
    import cupy as cp
    import torch

    from cudal2.harness import guards, snapshots, timing
    from cudal2.harness.judge import Failed, check_arena, release_memory
    from cudal2.harness.launch import LaunchSpec, SpecError
    from cudal2.harness.module import LoadError, Module
    from cudal2.harness.worker import beat
    from cudal2.rl.general import BY_ID, tail_sizes

    task = BY_ID[task_id]
    tail = tail_sizes(task) if sizes is None else None   # a caller's own sizes are judged as given
    sizes = dict(sizes or task.sizes)
    try:
        spec = LaunchSpec.from_dict(spec_dict)
        if spec.task != task_id:
            raise TaskFailed("load", f"the launch spec is for task {spec.task!r}, not {task_id!r}")
        ws_bytes = spec.workspace_for(sizes)
        mod = Module(open(binary, "rb").read(), spec)
        held.append(mod)
    except (SpecError, LoadError) as e:
        raise TaskFailed("load", str(e)) from None
    if mod.local_bytes > guards.LOCAL_BYTES:
        raise TaskFailed("load", f"a kernel uses {mod.local_bytes} bytes of local memory per thread, more than "
                                 f"{guards.LOCAL_BYTES}")
    if ws_bytes > cfg.verify.max_workspace_bytes:
        raise TaskFailed("load", f"asks for {ws_bytes} workspace bytes, more than {cfg.verify.max_workspace_bytes}")
    timeout = cfg.verify.call_timeout_s
    cs = cp.cuda.Stream(non_blocking=False)
    ts = torch.cuda.ExternalStream(cs.ptr)
    out: dict = {"ok": False, "task": task_id, "sizes": sizes}
    with cs, torch.cuda.stream(ts):
        def call(st: _Setup, i: int, stage: str) -> None:
            rc = mod.launch(st.args(i), st.sizes, st.ws[i], cs.ptr)
            if rc:   # 1: the spec does not resolve; any other code is the driver's, maybe sticky
                # review 38: a later launch can return 1 (cuLaunchKernelEx's invalid value, e.g. a
                # block z over 64) after earlier launches of this call were enqueued: they must end,
                # cleanly, before the verdict and the module's unload (a hang or error: a fault)
                settle(stage)
                raise TaskFailed(stage, f"the call returned {rc}", fault=rc != 1)

        def settle(stage: str) -> None:
            beat(stage, timeout + 30)
            try:
                timing.wait(cs, timeout)
                cp.cuda.runtime.deviceSynchronize()
            except timing.Hang as e:
                raise TaskFailed(stage, f"hang: {e}", fault=True) from None
            except (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError) as e:
                raise TaskFailed(stage, f"CUDA error: {e}", fault=True) from None

        def checked(st: _Setup, stage: str) -> None:
            """Every set's inputs as their seeds give them, the arena's background (one check
            covers every set), then every set's outputs."""
            if not all(st.inputs_intact(i) for i in range(st.n)):
                raise TaskFailed("inputs", "the call modified an input")
            try:   # the GEMM judge's arena check and message
                check_arena(st.arena, lambda j: st.names[j], "")
            except Failed as f:
                raise TaskFailed("canary", f.reason) from None
            for i in range(st.n):
                ok, why = st.check_outputs(i)
                if not ok:
                    raise TaskFailed(stage, why if st.n == 1 else f"set {i}: {why}")

        def trial(st: _Setup) -> None:
            """One verification call: fresh inputs under fresh poison, the chip scrubbed, free pool
            blocks unmapped, then every check."""
            st.fill(0)
            guards.scrub()
            release_memory()
            torch.cuda.empty_cache()   # torch's cached free blocks too: unmapped, nothing to keep things in
            call(st, 0, "verify")
            settle("verify")
            checked(st, "verify")

        # --- verification ---------------------------------------------------------------------
        st = _Setup(task, sizes, ws_bytes, 1, cfg.verify.guard_bytes)
        for _ in range(cfg.verify.gaussian_trials):
            trial(st)
        # Determinism: the last trial's inputs again, under fresh poison, give the same bits.
        first = {b.name: st.sets[0][b.name].cpu() for b in task.outputs}   # on the host: out of a call's reach
        st.fill(0, inputs=False)
        guards.scrub()
        call(st, 0, "determinism")
        settle("determinism")
        for name, prev in first.items():
            if not torch.equal(st.sets[0][name].cpu().view(torch.uint8), prev.view(torch.uint8)):
                raise TaskFailed("determinism", f"{name}: a second call on the same inputs gave other bits")
        del st
        if tail is not None:   # any positive sizes: one trial where no tile or vector width divides
            try:
                ws_tail = spec.workspace_for(tail)
            except SpecError as e:
                raise TaskFailed("verify", str(e)) from None
            if ws_tail > cfg.verify.max_workspace_bytes:
                raise TaskFailed("verify", f"asks for {ws_tail} workspace bytes at {tail}, more than "
                                           f"{cfg.verify.max_workspace_bytes}")
            st = _Setup(task, tail, ws_tail, 1, cfg.verify.guard_bytes)
            try:
                trial(st)
            except TaskFailed as f:
                raise TaskFailed(f.stage, f"at sizes {tail}: {f.reason}", f.fault) from None
            del st
        out["verified"] = True
        if not time_it:
            out["ok"] = True
            return out
        # --- timing -----------------------------------------------------------------------------
        from cudal2.harness.judge import device
        from cudal2.rl.general import bytes_moved
        l2 = device().l2_bytes
        nsets = max(2, min(16, math.ceil(2 * l2 / max(1, bytes_moved(task, sizes)))))
        st = _Setup(task, sizes, ws_bytes, nsets, cfg.verify.guard_bytes)
        for i in range(nsets):
            st.fill(i)
        flush = cp.empty(int(cfg.timing.flush_l2_factor * l2), dtype=cp.uint8)
        graphs: dict = {}
        # Snapshot nodes behind the candidate's calls (see harness/snapshots.py), one per output:
        # each call's outputs must be final when it ends. torch's graphs give no handle to disable
        # nodes in, so the references carry none: the candidate alone pays for the (disabled)
        # nodes, about half a microsecond per call, which can only lower its speedup.
        snaps = [snapshots.Snapshots([st.sets[i][b.name] for i in range(nsets)], cs, nsets) for b in task.outputs]
        graphs["candidate"] = (timing.capture(cs, lambda i: call(st, i, "timing"), list(range(nsets)),
                                              after=lambda i: [s.capture(i) for s in snaps]), nsets)
        ref = task.reference
        runners = {"torch": ref}
        if with_compile:
            runners["torch_compile"] = _compiled(task_id, ref)
        for name, fn in runners.items():
            beat("timing", 900)
            for _ in range(3):   # warm-up (and compile)
                [fn(**{b.name: st.sets[i][b.name] for b in task.inputs}) for i in range(nsets)]
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=ts):
                keep = [fn(**{b.name: st.sets[i][b.name] for b in task.inputs}) for i in range(nsets)]
            graphs[name] = (_TorchGraph(g, keep), nsets)
        names = list(graphs)

        def before(n: str, inputs: bool = True) -> None:
            for i in range(nsets):
                st.fill(i, inputs)
            if n == "candidate":
                guards.scrub()
                for s in snaps:
                    s.arm(graphs["candidate"][0], cfg.timing.snapshot_calls)
            timing.flush_l2(flush)

        def after(n: str) -> None:
            """After a candidate replay: every set's inputs and outputs, the arena, the snapshots."""
            if n == "candidate":
                settle("timing")   # first: a fault of the candidate's surfaces here, as its own
                for s in snaps:
                    s.verify()
                checked(st, "timing")
                late = sum(s.mismatches() for s in snaps)
                if late:
                    raise TaskFailed("timing", f"{late} output bytes sampled the moment their call ended differ from "
                                               "the replay's final outputs: a later call completed or changed them")

        beat("timing", 900)
        t0 = time.monotonic()
        times = timing.offline(cs, graphs, cfg.timing.repeats, timeout,
                               before={n: (lambda n=n: before(n)) for n in names},
                               after={n: (lambda n=n: after(n)) for n in names})
        # Determinism in timing too: a last replay of the candidate's own (a reference's setup may
        # have come last and refilled every set), then its inputs again, under fresh poison,
        # replayed as any timed replay: the same bits in every set.
        before("candidate")
        graphs["candidate"][0].launch(cs)
        after("candidate")
        kept = [{b.name: st.sets[i][b.name].clone() for b in task.outputs} for i in range(nsets)]
        before("candidate", inputs=False)
        graphs["candidate"][0].launch(cs)
        after("candidate")
        for i, outs in enumerate(kept):
            for name, prev in outs.items():
                if not torch.equal(st.sets[i][name].view(torch.uint8), prev.view(torch.uint8)):
                    raise TaskFailed("determinism", f"{name} of set {i}: a timed replay on the same inputs gave "
                                                    "other bits")
        out["timing_s"] = time.monotonic() - t0
        out["times_us"] = {n: t.median_us for n, t in times.items()}
        out["speedup"] = {n: timing.paired_speedup(times[n], times["candidate"]) for n in names if n != "candidate"}
        out["nsets"] = nsets
        out["ok"] = True
    return out


_COMPILED: dict = {}


def _compiled(task_id: str, ref):
    """torch.compile of a task's reference, once per worker process (compiling takes seconds)."""
    if task_id not in _COMPILED:
        import torch
        _COMPILED[task_id] = torch.compile(ref)
    return _COMPILED[task_id]


class _TorchGraph:
    """A captured torch graph, launched the way `timing.offline` launches cupy's."""

    def __init__(self, graph, keep):
        self.graph, self.keep = graph, keep   # keep: the captured outputs stay allocated

    def launch(self, stream) -> None:
        self.graph.replay()


def evaluate_task(source: str, task_id: str, cfg: Config, worker=None, **kw) -> dict:
    """Build `source` (device code only, naming `task_id`) here and judge it in a worker (one made
    for the call when none is given); the verdict, with 'stage' and 'reason' when it failed."""
    from cudal2.harness import build
    from cudal2.harness.worker import Worker
    res = build.build(source, cfg.build)
    if not res.ok:
        return {"ok": False, "stage": res.stage, "reason": res.reason, "task": task_id, "infra": res.infra}
    if res.kind != "cubin" or not res.spec or res.spec.get("task") != task_id:
        return {"ok": False, "stage": "policy", "task": task_id,
                "reason": f"not a device-only file with a launch spec for task {task_id!r}"}
    own = worker is None
    worker = worker or Worker()
    try:
        o = worker.run("cudal2.harness.task_judge:judge_task", res.lib_path, res.spec, task_id, cfg, **kw)
    finally:
        if own:
            worker.close()
    if not o.ok:
        last = o.error.strip().splitlines()[-1] if o.error.strip() else ""
        why = ": ".join(x for x in (o.fault.value if o.fault else "", last) if x)
        return {"ok": False, "stage": o.stage or "worker", "task": task_id, "reason": why or "the worker failed"}
    return o.value
