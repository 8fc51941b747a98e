"""The judge: stage-by-stage verification and timing of one built candidate at one shape.

Runs only inside the worker process (see `worker.py`): it loads untrusted code.

Guarantees, in order (the first failure stops the run and is recorded with its stage):
- load: the library opens and exports `cudal2_gemm`; the workspace it asks for is allowed.
- Every candidate call: the workspace is filled with garbage and C with NaN first; the call
  runs before any reference; its status must be 0; the stream must drain within the deadline
  (else a hang); then A and B must be bitwise unchanged ("inputs") and every guard region intact
  ("canary"), and only then is the output compared.
- exact: {-1, 0, 1} inputs, output equal to the exact result.
- gaussian: Gaussian and positive-mean (uniform) trials, error against a float64 reference within
  `error_ratio` x cuBLAS's error (relative Frobenius) and `max_error_ratio` x (largest element).
- repeat: consecutive calls through the same pointers, new contents each time, each checked.
- determinism: identical inputs, outputs equal bit for bit.
- timing: offline and server timing beside the baselines; the call must capture into a graph;
  outputs of timed calls are checked, then new contents go through the same pointers and the
  graph is replayed and checked again (pointer-keyed caches fail here).
- sanity: no time below the physical floor of the shape.
Inputs are drawn fresh (unpredictable seed) for every trial; seeds are recorded in `checks`.

Does not: compile (build.py), isolate (worker.py) or persist (store.py).
"""

from __future__ import annotations

import math
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass

import cupy as cp

from cudal2.config import Config
from cudal2.harness import buffers, compare, timing
from cudal2.harness.baselines import Cublas, Sets, autotuned as baselines_autotuned, runners as baseline_runners
from cudal2.harness.device import DeviceInfo, probe, sm_clock_mhz
from cudal2.harness.loader import LoadError, load_candidate
from cudal2.harness.worker import beat
from cudal2.problem import Problem
from cudal2.result import Fault, Stage, Timing

_device: DeviceInfo | None = None


class Failed(Exception):
    def __init__(self, stage: Stage, reason: str, fault: Fault | None = None):
        super().__init__(reason)
        self.stage, self.reason, self.fault = stage, reason, fault


@contextmanager
def faults(stage: Stage):
    """A hang past its deadline, or a CUDA error, inside the block fails `stage` with that fault."""
    try:
        yield
    except timing.Hang as e:
        raise Failed(stage, f"hang: {e}", Fault.HANG) from None
    except cp.cuda.runtime.CUDARuntimeError as e:
        raise Failed(stage, f"CUDA error: {e}", Fault.CUDA_ERROR) from None


def device() -> DeviceInfo:
    global _device
    if _device is None:
        from cudal2.harness.worker import gpu_index
        _device = probe(gpu_index())
    return _device


@dataclass
class Trial:
    """Guarded A, B, C and workspace for one shape, with saved copies of the inputs."""
    p: Problem
    A: buffers.Guarded
    B: buffers.Guarded
    C: buffers.Guarded
    W: buffers.Guarded
    ws_bytes: int

    @classmethod
    def make(cls, p: Problem, ws_bytes: int, guard: int) -> "Trial":
        return cls(p, buffers.Guarded(2 * p.M * p.K, guard), buffers.Guarded(2 * p.N * p.K, guard),
                   buffers.Guarded(2 * p.M * p.N, guard), buffers.Guarded(ws_bytes, guard), ws_bytes)

    @property
    def a(self): return self.A.view(cp.float16, (self.p.M, self.p.K))
    @property
    def b(self): return self.B.view(cp.float16, (self.p.N, self.p.K))
    @property
    def c(self): return self.C.view(cp.float16, (self.p.M, self.p.N))

    def fill(self, dist: str) -> int:
        seed = buffers.new_seed()
        buffers.fill(self.a, dist, seed)
        buffers.fill(self.b, dist, seed + 1)
        return seed


class Judge:
    def __init__(self, lib_path: str | None, cfg: Config):
        """`lib_path` None judges nothing and times the baselines alone."""
        self.cfg = cfg
        self.stream = cp.cuda.Stream(non_blocking=False)  # blocking: legacy-stream use breaks capture
        try:
            self.cand = load_candidate(lib_path) if lib_path else None
        except LoadError as e:
            raise Failed(Stage.LOAD, str(e)) from None
        self.checks: dict = {}
        self._cublas: Cublas | None = None

    @property
    def cublas(self) -> Cublas:
        if self._cublas is None:
            self._cublas = Cublas(self.stream)
        return self._cublas

    # --- one call, with the per-call checks ------------------------------------------------
    def workspace_bytes(self, p: Problem) -> int:
        if self.cand is None:
            return 0
        try:
            n = self.cand.workspace_bytes(p.M, p.N, p.K)
        except Exception as e:
            raise Failed(Stage.LOAD, f"cudal2_workspace_bytes failed: {e}") from None
        if n > self.cfg.verify.max_workspace_bytes:
            raise Failed(Stage.LOAD, f"asks for {n} workspace bytes, more than the limit "
                                     f"{self.cfg.verify.max_workspace_bytes}")
        return n

    def call(self, t: Trial, stage: Stage) -> None:
        """Poisoned output, garbage workspace, one call, wait, then inputs and canaries checked."""
        v = self.cfg.verify
        a_copy, b_copy = t.a.copy(), t.b.copy()
        buffers.poison(t.c)
        buffers.garbage(t.W.view(cp.uint8, (t.ws_bytes,)))
        self.guarded_call(t.A.ptr, t.B.ptr, t.C.ptr, t.p, t.W.ptr, t.ws_bytes, stage, v.call_timeout_s)
        if not (bool((t.a.view(cp.uint16) == a_copy.view(cp.uint16)).all())
                and bool((t.b.view(cp.uint16) == b_copy.view(cp.uint16)).all())):
            raise Failed(Stage.INPUTS, "the call modified A or B")
        for name, g in (("A", t.A), ("B", t.B), ("C", t.C), ("workspace", t.W)):
            if not g.intact():
                raise Failed(Stage.CANARY, f"write outside {name}: its guard region changed")

    def guarded_call(self, a: int, b: int, c: int, p: Problem, w: int, wb: int, stage: Stage, timeout: float) -> None:
        beat(stage.value, timeout + 30)
        with self.stream:
            rc = self.cand.call(a, b, c, p.M, p.N, p.K, w, wb, self.stream.ptr)
            if rc != 0:
                raise Failed(stage, f"cudal2_gemm returned {rc} ({_error_name(rc)})")
            self.wait(stage, timeout)

    def wait(self, stage: Stage, timeout: float) -> None:
        with faults(stage):
            timing.wait(self.stream, timeout)

    def drain_device(self, stage: Stage, timeout: float) -> None:
        """Wait for every stream of the device. cudaDeviceSynchronize blocks without a deadline of its
        own, so the deadline is the worker's heartbeat: a hang here is killed and reported as one."""
        beat(stage.value, timeout + 30)
        with faults(stage):
            cp.cuda.runtime.deviceSynchronize()

    # --- stages ------------------------------------------------------------------------------
    def verify(self, p: Problem) -> None:
        v = self.cfg.verify
        t = Trial.make(p, self.workspace_bytes(p), v.guard_bytes)
        key = str(p)
        with self.stream:
            seed = t.fill("pm1")
            self.call(t, Stage.EXACT)
            ok, st = compare.exact(t.c, compare.reference(t.a, t.b))
            self.record(key, "exact", seed=seed, **st)
            if not ok:
                raise Failed(Stage.EXACT, f"{st['mismatches']} of {st['elements']} outputs differ from the exact result")

            vendor = cp.empty_like(t.c)
            for trial in range(v.gaussian_trials):
                dist = "uniform" if trial == 1 else "normal"
                seed = t.fill(dist)
                self.call(t, Stage.GAUSSIAN)
                self.tolerance_check(t.a, t.b, t.c, vendor, Stage.GAUSSIAN, key, dist=dist, seed=seed)

            for r in range(v.repeat_calls):
                seed = t.fill("normal")  # new contents, same pointers
                self.call(t, Stage.REPEAT)
                self.tolerance_check(t.a, t.b, t.c, vendor, Stage.REPEAT, key, call=r, seed=seed)

            seed = t.fill("normal")
            self.call(t, Stage.DETERMINISM)
            first = t.c.copy()
            for d in range(1, v.determinism_calls):
                self.call(t, Stage.DETERMINISM)
                ok, st = compare.bitwise(t.c, first)
                if not ok:
                    self.record(key, "determinism", seed=seed, **st)
                    raise Failed(Stage.DETERMINISM, f"call {d + 1} differs from call 1 in {st['differing']} outputs "
                                                    "on identical inputs (a race or order-dependent reduction)")
        del t
        cp.get_default_memory_pool().free_all_blocks()

    def tolerance_check(self, a, b, c, vendor, stage: Stage, key: str, **info) -> None:
        self.cublas.tn(a, b, vendor)
        ok, st = compare.tolerance(c, compare.reference(a, b), vendor, self.cfg.verify.error_ratio,
                                   self.cfg.verify.max_error_ratio)
        self.record(key, stage.value, **info, **st)
        if not ok:
            if st["nonfinite"]:
                raise Failed(stage, f"{st['nonfinite']} outputs are NaN/Inf (unwritten or overflowed) ({_info(info)})")
            raise Failed(stage, f"error {st['rel']:.2e} (max {st['max']:.2e}) vs cuBLAS {st['vendor_rel']:.2e} "
                                f"(max {st['vendor_max']:.2e}): over {self.cfg.verify.error_ratio}x / "
                                f"{self.cfg.verify.max_error_ratio}x ({_info(info)})")

    def record(self, key: str, name: str, **stats) -> None:
        self.checks.setdefault(key, {}).setdefault(name, []).append(stats)

    def time(self, p: Problem) -> dict:
        """Both timing modes beside the baselines, with the timed outputs checked."""
        tc, dev = self.cfg.timing, device()
        timeout = self.cfg.verify.call_timeout_s
        set_bytes = p.min_bytes * (2 if "cublas" in tc.baselines else 1)
        nsets = max(2, min(tc.max_sets, math.ceil(tc.rotation_l2_factor * dev.l2_bytes / p.min_bytes)))
        free = cp.cuda.runtime.memGetInfo()[0]
        nsets = max(2, min(nsets, int(free * 0.5 // max(set_bytes, 1))))
        ws = self.workspace_bytes(p)
        W = buffers.Guarded(ws, self.cfg.verify.guard_bytes)
        with self.stream:
            sets = self.make_sets(p, nsets, "cublas" in tc.baselines)

            def cand(i: int) -> None:
                rc = self.cand.call(sets.A[i].data.ptr, sets.B[i].data.ptr, sets.C[i].data.ptr, p.M, p.N, p.K,
                                    W.ptr, ws, self.stream.ptr)
                if rc != 0:
                    raise Failed(Stage.TIMING, f"cudal2_gemm returned {rc} ({_error_name(rc)}) in a timed call")

            run = {"candidate": cand} if self.cand else {}
            beat("timing", 600)
            from cudal2.harness.cublaslt import LtGemm
            lt = None
            if {"cublaslt", "cublaslt_autotune"} & set(tc.baselines):
                self._lt_ws = cp.empty(64 << 20, dtype=cp.uint8)
                lt = LtGemm(p.M, p.N, p.K, self._lt_ws.data.ptr, self._lt_ws.nbytes)
                lt.algorithms(tc.autotune_k)
            run.update(baseline_runners(tc.baselines, sets, self.stream, self.cublas, lt, tc.autotune_k,
                                        tc.min_replay_ms, tc.max_graph_calls, timeout))
            times: dict[str, dict] = {}
            if "offline" in tc.modes:
                with faults(Stage.TIMING):
                    try:
                        graphs = timing.build_graphs(self.stream, run, nsets, tc.min_replay_ms, tc.max_graph_calls,
                                                     timeout)
                    except timing.CaptureError as e:
                        raise Failed(Stage.TIMING, f"not stream-ordered: {e}") from None
                # Drain the whole device, not just our stream, before the poison: work a candidate pushed
                # to any other stream during the eager warm-up and capture must not land after it and pass
                # for the output of the (empty) timed graph.
                self.drain_device(Stage.TIMING, timeout)
                beat("timing", 600)
                for c in sets.C:
                    buffers.poison(c)
                with faults(Stage.TIMING):
                    times["offline"] = timing.offline(self.stream, graphs, tc.repeats, timeout)
            if "offline" in tc.modes and self.cand:
                self.check_sets(sets, "offline timed calls", range(nsets))
                # New contents through the same pointers, then the same graph again.
                for i in range(nsets):
                    buffers.fill(sets.A[i], "normal", buffers.new_seed())
                    buffers.fill(sets.B[i], "normal", buffers.new_seed())
                    buffers.poison(sets.C[i])
                graphs["candidate"][0].launch(self.stream)
                self.wait(Stage.TIMING, timeout)
                self.check_sets(sets, "a replay with new input contents", range(nsets))
            if "server" in tc.modes:
                flush = cp.empty(int(tc.flush_l2_factor * dev.l2_bytes), dtype=cp.uint8)
                poison = {"candidate": lambda i: buffers.poison(sets.C[i])}
                with faults(Stage.TIMING):
                    times["server"] = timing.server(self.stream, run, nsets, tc.server_calls, tc.server_gap_us, flush,
                                                    timeout, before=poison, seed=random.getrandbits(32))
                if self.cand:
                    self.check_sets(sets, "server timed calls", range(min(nsets, tc.server_calls)))
            if lt is not None:
                self.lt_algos = {"heuristic_count": len(lt), "autotune_choice": baselines_autotuned(p)}
                lt.close()
        return times

    def make_sets(self, p: Problem, n: int, with_bt: bool) -> Sets:
        s = Sets([], [], [], [], [])
        for _ in range(n):
            a = cp.empty((p.M, p.K), cp.float16); buffers.fill(a, "normal", buffers.new_seed())
            b = cp.empty((p.N, p.K), cp.float16); buffers.fill(b, "normal", buffers.new_seed())
            s.A.append(a); s.B.append(b)
            s.Bt.append(cp.ascontiguousarray(b.T) if with_bt else b)
            s.C.append(cp.empty((p.M, p.N), cp.float16)); s.Cb.append(cp.empty((p.M, p.N), cp.float16))
        return s

    def check_sets(self, sets: Sets, what: str, indices) -> None:
        """Check a random sample of the sets (always the first and the last) against the reference."""
        idx = list(indices)
        sample = sorted(set(random.sample(idx, min(len(idx), 24))) | {idx[0], idx[-1]})
        vendor = cp.empty_like(sets.C[0])
        for i in sample:
            try:
                self.tolerance_check(sets.A[i], sets.B[i], sets.C[i], vendor, Stage.TIMING, "timing", set=i, what=what)
            except Failed as f:
                raise Failed(Stage.TIMING, f"{what}: {f.reason}") from None


def _error_name(rc: int) -> str:
    try:
        return cp.cuda.runtime.getErrorName(rc)
    except Exception:
        return "unknown error"


def _info(info: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in info.items() if k != "seed")


def judge(lib_path: str, M: int, N: int, K: int, cfg: Config, verify_shapes: list[tuple[int, int, int]] | None = None,
          time_it: bool = True) -> dict:
    """Worker entry point: the EvalResult fields this stage decides (stage, ok, reason, fault,
    checks, times, speedup, tflops, floor_fraction, gpu)."""
    p = Problem(M, N, K)
    t0 = time.monotonic()
    out: dict = {"stage": Stage.LOAD.value, "ok": False, "reason": "", "fault": None, "checks": {}}
    j = None
    try:
        dev = device()
        out["gpu"] = {"name": dev.name, "driver": dev.driver, "cc": list(dev.cc), "sm_count": dev.sm_count}
        j = Judge(lib_path, cfg)
        for shape in [p] + [Problem(*s) for s in (verify_shapes or []) if tuple(s) != (M, N, K)]:
            j.verify(shape)
        if time_it:
            times = j.time(p)
            out.update(summarize(p, times, dev, cfg))
            floor = p.floor_s(dev.peak_flops, dev.peak_bytes_per_s)
            for mode, rs in times.items():
                if rs["candidate"].median_us * 1e-6 < floor * cfg.timing.floor_slack:
                    raise Failed(Stage.SANITY, f"{mode} time {rs['candidate'].median_us:.2f} us is below the physical "
                                               f"floor {floor * 1e6:.2f} us for {p}: a bug or a cheat")
        out.update(stage=Stage.DONE.value, ok=True)
    except Failed as f:
        out.update(stage=f.stage.value, reason=f.reason, fault=f.fault.value if f.fault else None)
    finally:
        out["checks"] = j.checks if j else {}
        out["elapsed_s"] = time.monotonic() - t0
    if out.get("fault"):
        from cudal2.harness.worker import request_exit
        request_exit()  # a hang or sticky error leaves the context unusable
    else:
        cp.get_default_memory_pool().free_all_blocks()
    return out


def summarize(p: Problem, times: dict, dev: DeviceInfo, cfg: Config) -> dict:
    floor = p.floor_s(dev.peak_flops, dev.peak_bytes_per_s)
    res = {"times": {m: {r: t.__dict__ for r, t in rs.items()} for m, rs in times.items()},
           "speedup": {}, "tflops": {}, "floor_fraction": {}}
    for mode, rs in times.items():
        cand = rs["candidate"].median_us
        # A composite baseline is the runner with the lowest median; the speedup against it is paired.
        base = {r: t for r, t in rs.items() if r != "candidate"}
        if "cublas_tn" in base:
            base["cublas"] = _fastest(base["cublas_tn"], base["cublas_nn"])
            if "cublaslt" in base:  # what a user gets without autotuning: the search's yardstick
                base["vendor_default"] = _fastest(base["cublas"], base["cublaslt"])
        if base:
            base["vendor_best"] = _fastest(*base.values())
        res["speedup"][mode] = {r: timing.paired_speedup(t, rs["candidate"]) for r, t in base.items()}
        res["tflops"][mode] = p.flops / (cand * 1e-6) / 1e12
        res["floor_fraction"][mode] = floor / (cand * 1e-6)
    res["gpu"] = {"name": dev.name, "driver": dev.driver, "cc": list(dev.cc), "sm_count": dev.sm_count,
                  "sm_clock_mhz_after": sm_clock_mhz(dev.index), "max_sm_clock_mhz": dev.max_sm_clock_mhz,
                  "peak_tflops": dev.peak_flops / 1e12, "peak_tb_s": dev.peak_bytes_per_s / 1e12}
    return res


def _fastest(*ts: Timing) -> Timing:
    return min(ts, key=lambda t: t.median_us)


def baselines_job(M: int, N: int, K: int, cfg: Config) -> dict:
    """Worker entry point for `cudal2 baselines`: the vendor runners alone, both modes."""
    p = Problem(M, N, K)
    dev = device()
    j = Judge(None, cfg)
    times = j.time(p)
    return {"times": {m: {r: t.__dict__ for r, t in rs.items()} for m, rs in times.items()},
            "lt": getattr(j, "lt_algos", {}), "floor_us": p.floor_s(dev.peak_flops, dev.peak_bytes_per_s) * 1e6,
            "gpu": {"name": dev.name, "driver": dev.driver, "sm_clock_mhz_after": sm_clock_mhz(dev.index),
                    "max_sm_clock_mhz": dev.max_sm_clock_mhz}}


def device_job() -> dict:
    """Worker entry point: the facts of the worker's GPU (for priors and reports)."""
    return device().to_dict()
