"""The judge: stage-by-stage verification and timing of one built artifact at one shape.

Runs only inside the worker process (see `worker.py`). A contract v2 artifact is a cubin: the
judge loads a fresh module and launches its kernels itself from the launch spec, so no code of
the candidate's runs on the host. A v1 artifact (trusted host code only) is a shared library,
judged in a worker process of its own that leaves after the job.

Guarantees, in order (the first failure stops the run and is recorded with its stage):
- load: the module loads and matches its spec (v2), or the library exports `cudal2_gemm` (v1);
  the workspace it asks for is allowed.
- Every buffer a call can address (A, B, C, the workspace; in verification and in timing alike)
  is a region of a `buffers.Arena`: random layout, every other byte checked background (the
  span of a call's own pointers can still tell verification from timing: timing is checked as
  closely as verification, so knowing the stage buys nothing).
- Every candidate call, in every stage: `guards.prep` first fills the workspace with fresh random
  bytes and C with random answer-scale values (but in the carried calls of the repeat stage), and
  `guards.scrub` overwrites the shared memory,
  local memory and registers an earlier call could have left something in; free pool blocks are
  unmapped; the call runs before any reference; its status must be 0; the stream, then the whole
  device, must drain within the deadline (else a hang); then A and B must be bitwise what their
  seeds give ("inputs") and the arena's background intact ("canary"), and only then is the
  output compared. No reference copy of anything exists in device memory while candidate code
  runs: inputs, background and the spot checks' operands are regenerated from seeds on the host.
- exact: {-1, 0, 1} inputs, output equal to the exact result.
- gaussian: a Gaussian (both operands, as every timed call), a positive-mean and a cancelling
  trial (see `buffers.fill`), error against a float64 reference within `error_ratio` x cuBLAS's error
  (relative Frobenius) and `max_error_ratio` x (largest element).
- repeat: consecutive calls through the same pointers, new contents each time, each checked; then
  calls as the library makes them (`carried_calls`): C and the workspace left as the last call
  left them, the same inputs a random number of times, then one element of A moved, then A and C
  moved in turn over three buffers each with new A contents (a model's forward pass), each
  output and both operands checked; once on the timed calls' inputs and once at a model's scales.
- determinism: identical inputs, outputs equal bit for bit.
- timing: offline and server beside the baselines, on distinct input sets in one arena (the
  baselines' own buffers in another). Before every replay (offline) or call (server) of every
  runner, untimed, `guards` regenerate the smaller operand densely (no timed call sees inputs an
  earlier call saw; both operands Gaussian, as in the verification's normal trial), randomize
  workspaces and C, scrub the chip before the candidate's (and rewrite the harness's cuBLAS and
  cuBLASLt workspaces and the server hold's pinned block with random bytes), and flush the L2
  (which ends with a register scrub, so the flush's kernels leave no addresses in the registers
  it writes, R0..R29 at 32 a thread after R0..R61 at 64; a snapshot node rewrites its own as it
  ends; R30/R31 of a 32 allotment are not all covered, UR0..UR3 and UR62 not). After each of the candidate's
  replays and calls, once it has drained: a spot check of every call's output at
  positions drawn from a key new to that check, against operands recomputed from the generator
  (the log read at once), then both operands compared with the generator and the arena's
  background checked, so nothing a call leaves can reach a later one. Snapshot nodes behind
  every call of every graph (`snapshots`), each armed independently for each replay, find an
  output that a later call of the same replay completed. After the last offline replay, a
  sample of sets is checked in full, and the graph runs once more on the same inputs: the
  sample must come out bit for bit the same. After
  the server calls, one more made as they are is checked in full and repeated, bitwise.
  Nothing of this is inside a timed region but the snapshot nodes, the same in every graph.
- sanity: no time below the physical floor of the shape.
Inputs are drawn fresh (unpredictable seed) for every trial; seeds are recorded in `checks`.
The verification of all the shapes a kernel declares (`judge`) has one deadline, `verify.max_verify_s`:
past it the kernel fails (each call beats the worker's heartbeat, which bounds one call, not the whole).

Does not: compile (build.py), isolate (worker.py) or persist (store.py).
"""

from __future__ import annotations

import math
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import cupy as cp

from cudal2.config import Config
from cudal2.harness import buffers, compare, driver, guards, snapshots, timing
from cudal2.harness.artifact import JudgeRequest
from cudal2.harness.baselines import Cublas, Sets, autotuned as baselines_autotuned, runners as baseline_runners
from cudal2.harness.device import DeviceInfo, probe, sm_clock_mhz
from cudal2.harness.worker import beat, request_exit
from cudal2.problem import Problem
from cudal2.result import Fault, Stage, Timing

_CUDA_ERROR_MEMORY_ALLOCATION = 2   # cudaErrorMemoryAllocation

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
    except (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError) as e:
        # (a harness kernel launched behind a faulting candidate call reports its error through the driver API)
        raise Failed(stage, f"CUDA error: {e}", Fault.CUDA_ERROR) from None


def device() -> DeviceInfo:
    global _device
    if _device is None:
        from cudal2.harness.worker import gpu_index
        _device = probe(gpu_index())
    return _device


def load(req: JudgeRequest):
    """The callable candidate: a fresh v2 module, or a v1 library (in a process that leaves after)."""
    from cudal2.harness.loader import LoadError, load_artifact
    try:
        cand = load_artifact(req.binary, req.kind, req.spec)
    except LoadError as e:
        raise Failed(Stage.LOAD, str(e)) from None
    except cp.cuda.runtime.CUDARuntimeError as e:
        raise Failed(Stage.LOAD, f"CUDA error: {e}", Fault.CUDA_ERROR) from None
    local = getattr(cand, "local_bytes", 0)
    if local > guards.LOCAL_BYTES:   # the scrubber clears this much local memory per thread, no more
        cand.close()
        raise Failed(Stage.LOAD, f"a kernel uses {local} bytes of local memory per thread, more than the "
                                 f"{guards.LOCAL_BYTES} allowed")
    return cand


@dataclass
class Trial:
    """A, B, C and workspace for one shape: regions 0-3 of one arena (`buffers.Arena`), and
    `SLOTS - 1` more A's and C's (regions 4 on) that `rotate` moves A and C to, as the library's
    callers hand it another activation and another output block each call."""
    p: Problem
    arena: buffers.Arena
    ws_bytes: int
    drawn: tuple[str, str] = ("", "")            # (A's dist, B's dist) of the last fill
    slot: int = 0                                # which A and C the calls use (`rotate`)
    a_seeds: dict[int, int] = field(default_factory=dict)   # the seed each slot's A was last drawn with
    b_seed: int = 0                                          # the seed B was last drawn with
    b_nudge: tuple[int, int, float] | None = None            # an element of B moved since (`new_b`)
    pair: int = 0                                # the upper bits every seed since the fill shares (`_seed`)
    nudges: dict[int, tuple[int, int, float]] = field(default_factory=dict)   # (row, column, step) of
    #                                              the element `nudge` moved in a slot's A since its fill

    SLOTS = 3   # the product bench's smallest pool of A's (library/feed.py): a kernel keyed on
    #             another A pointer, or on an A pointer's cycle, meets its condition here
    NAMES = ("A", "B", "C", "the workspace") + tuple(f"{x} (slot {i})" for i in range(2, SLOTS + 1) for x in "AC")

    @classmethod
    def make(cls, p: Problem, ws_bytes: int, gap: int) -> "Trial":
        a, c = 2 * p.M * p.K, 2 * p.M * p.N
        return cls(p, buffers.Arena([a, 2 * p.N * p.K, c, ws_bytes] + [a, c] * (cls.SLOTS - 1), gap), ws_bytes)

    def _region(self, x: str, slot: int | None = None) -> int:
        slot = self.slot if slot is None else slot
        if slot == 0:
            return 0 if x == "A" else 2
        return 4 + 2 * (slot - 1) + (x == "C")

    def a_at(self, slot: int):
        return self.arena.view(self._region("A", slot), cp.float16, (self.p.M, self.p.K))

    @property
    def a(self): return self.a_at(self.slot)
    @property
    def b(self): return self.arena.view(1, cp.float16, (self.p.N, self.p.K))
    @property
    def c(self): return self.arena.view(self._region("C"), cp.float16, (self.p.M, self.p.N))
    @property
    def ptrs(self) -> tuple[int, int, int, int]:
        return tuple(self.arena.ptr(i) for i in (self._region("A"), 1, self._region("C"), 3))

    def _seed(self, operand: int) -> int:
        """A new seed for A (`operand` 0) or B (1): fresh low bits, this fill's upper 31 bits and
        the operand in bit 0. The split modes divide the columns between A and B by a hash of the
        upper bits and the operand bit, and take both scales from the upper bits (guards'
        `real_like`), so every A and B drawn since a fill, new or rotated, pair up."""
        return self.pair | (buffers.new_seed() & 0xFFFFFFFE) | operand

    def fill(self, dist: str) -> int:
        self.pair = buffers.new_seed() >> 32 << 32
        seed, self.b_seed, self.b_nudge = self._seed(0), self._seed(1), None
        da, db = TRIAL_DISTS.get(dist, (dist, dist))
        buffers.fill(self.a, da, seed)
        buffers.fill(self.b, db, self.b_seed)
        self.drawn, self.a_seeds, self.nudges = (da, db), {self.slot: seed}, {}
        return seed

    def new_b(self, whole: bool) -> None:
        """B changed in place, as a user's optimizer step or weight sync does (`whole`: rewritten
        from a new seed), or a LoRA merge or a sparse update does (one element moved by
        `nudge_step(K)`): a copy of B a kernel kept in its workspace, keyed on B's pointer, or on
        a few sampled elements of it, is stale from here on (review 57)."""
        if whole:
            self.b_seed, self.b_nudge = self._seed(1), None
            buffers.fill(self.b, self.drawn[1], self.b_seed)
            return
        self.b_nudge = _moved(self.p.N, self.p.K)
        _nudge(self.b, *self.b_nudge)

    @property
    def nudged(self) -> tuple[int, int, float] | None:
        """The nudge in the A now in use, if any."""
        return self.nudges.get(self.slot)

    def rotate(self) -> int:
        """The next A and C (slot), A filled with new contents from a new seed, B as it is, C as
        the last call there left it: what a library call meets in a model's forward pass."""
        self.slot = (self.slot + 1) % self.SLOTS
        seed = self._seed(0)
        self.a_seeds[self.slot] = seed
        self.nudges.pop(self.slot, None)
        buffers.fill(self.a, self.drawn[0], seed)
        return seed

    def settle(self) -> None:
        """Back to slot 0, every other slot's A and C overwritten with random bytes: nothing a
        carried call left there reaches a later stage's calls (which rewrite only the slot in use)."""
        for slot in range(1, self.SLOTS):
            for x in "AC":
                i = self._region(x, slot)   # (all but its last bytes past a multiple of 8: at most 6)
                buffers.randomize_at(self.arena.ptr(i), self.arena.sizes[i] - self.arena.sizes[i] % 8)
        self.slot, self.a_seeds, self.nudges = 0, {}, {}

    def nudge(self) -> None:
        """Move one element of A, at a random place, by `nudge_step(K)` (towards zero): one output
        row changes by that multiple of a column of B, far past the tolerance, while a key sampled
        from A most likely misses it."""
        self.nudges[self.slot] = _moved(self.p.M, self.p.K)
        _nudge(self.a, *self.nudges[self.slot])

    def inputs_intact(self) -> bool:
        """Every A drawn since the fill (each slot's) and B still hold what their seed gives, and a
        nudge since (regenerated now: no copy of them existed where the call could reach it)."""
        da, db = self.drawn
        return (all(_holds(self.a_at(slot), da, a_seed, self.nudges.get(slot))   # every A drawn since the
                    for slot, a_seed in self.a_seeds.items())                    # fill: a user's activations
                and _holds(self.b, db, self.b_seed, self.b_nudge))


def nudge_step(K: int) -> float:
    """How far `Trial.nudge` moves its element: 2, or sqrt(K)/4 where that is more. The tolerance's
    largest-element bound grows with the outputs (8x cuBLAS's largest error, about an fp16 ulp of
    the largest output at most, which is ~7 sqrt(K) at most on Gaussian inputs), while a stale row
    is off by the step times a column of B: a step of 2 stayed inside that bound for many draws at
    K = 65536 and N <= 64, where only the relative-norm bound could catch it (review 54). With
    sqrt(K)/4 the step grows as the ulp does, and a stale row of N >= 8 outputs passes the
    largest-element bound with a chance under 1e-6 at any K (tests/test_judge_nudge.py)."""
    return max(2.0, math.sqrt(K) / 4)


def _moved(rows: int, K: int) -> tuple[int, int, float]:
    """An element of a rows x K operand, drawn, and how far `_nudge` moves it."""
    rng = random.SystemRandom()
    return rng.randrange(rows), rng.randrange(K), nudge_step(K)


def _holds(x: cp.ndarray, dist: str, seed: int, moved: tuple[int, int, float] | None) -> bool:
    """`x` holds, bit for bit, what `buffers.fill(x, dist, seed)` writes, with `moved`'s element
    moved by `_nudge` when given (regenerated now: no copy existed where a call could reach it)."""
    if moved is None:
        return buffers.matches(x, dist, seed)
    want = cp.empty_like(x)
    buffers.fill(want, dist, seed)
    _nudge(want, *moved)
    return compare.bitwise(x, want)[0]


def _nudge(a: cp.ndarray, r: int, k: int, step: float) -> None:
    v = a[r, k]
    a[r, k] = cp.where(v < 0, v + step, v - step)


GAUSSIAN_DISTS = ("normal", "uniform", "cancel", "outlier", "outlier_w", "outlier_split")
# (A, B) per trial. The 'normal' trial draws what every timed call gets, both operands Gaussian, so
# no statistic of the inputs tells it from a timed call ('pm1' only in the exact stage). The timed
# calls are Gaussian because the speed of a power-bound kernel depends on its data: on the H100
# (eval/results/cold_start_inputs_h100_2026-11-24.json) an sm90raw kernel ran 5% faster than on
# Gaussian inputs when one operand was U(0.5, 1) with signs in runs (the 'signed' operand timing
# used until then), nvjet 1%: that scored it 1.06 against a vendor it beats by 1.016 on what
# torch.randn, and a model's layers, feed it.
# The outlier trials have what the others never do (guards' `real_like`, modes 4-9): A at an
# activation's scale (2^-5 to 2^2) and B at a weight's (2^-8 to 2^-4),
# continuous and secret, rows and columns of different size, and outliers up to 2^10 times the
# bulk (to ~23000), in whole columns and single elements: in A, in B, and in both (a secret split
# of the columns, with a few columns where a massive activation meets a super weight). Without them
# a kernel honest wherever inputs looked like the judge's (unit scale, within 5.8) could
# clamp, or use reduced-range or scale-dependent arithmetic, on real data and be served (reviews 71,
# 74, 75; bad/zz74). Each is needed: a kernel could gate on the other operand's outliers, or on both
# having them.
TRIAL_DISTS = {"normal": ("normal", "normal"), "cancel": ("positive", "signed"),
               "outlier": ("act_outlier", "weight"), "outlier_w": ("act", "weight_outlier"),
               "outlier_split": ("act_split", "weight_split"), "scaled": ("act", "weight")}
# The carried calls' chains: one on the timed calls' inputs, one at a model's scales (A an
# activation's, B a weight's, both secret and kept through the chain as a model keeps them). With
# unit-scale B alone a kernel could switch a several-call cheat (a memo of A, a kept copy of B) on
# only where B was as small as a weight: it met that condition in no carried call and on no bench
# call, and in every model (review 78).
CARRIED_DISTS = ("normal", "scaled")
# A light shape (an M-range's interior M values) gets the Gaussian trial beside the cancelling one.
# The cancelling trial alone can be recognised by looking (every A value positive): a kernel honest
# there, and at the range's ends, which are verified in full, rounded every 16-term partial sum to
# fp16 at every other M and input, and passed (review 46: bad/zz46_mrange_interior_fp16_partials;
# the library serves an M-range entry at every M of its range). The outlier trials too: an interior
# M gated on input magnitude or scale would meet no other.
LIGHT_DISTS = ("normal", "cancel", "outlier", "outlier_w", "outlier_split")


def trial_dists(light: bool, trials: int) -> list[str]:
    """The gaussian stage's trials, in order: at a light shape `LIGHT_DISTS`; else every one of
    GAUSSIAN_DISTS, then 'normal' up to `trials`."""
    if light:
        return list(LIGHT_DISTS)
    return [GAUSSIAN_DISTS[i] if i < len(GAUSSIAN_DISTS) else "normal" for i in range(max(trials, len(GAUSSIAN_DISTS)))]
TIMED_DIST = "normal"

# Per worker process, shared by the candidates it judges (all harness objects: a v2 candidate has no
# host code to touch them, and a v1 candidate's process leaves after its one job).
_shared: dict = {}


def _shared_stream() -> cp.cuda.Stream:
    if "stream" not in _shared:
        _shared["stream"] = cp.cuda.Stream(non_blocking=False)  # blocking: legacy-stream use breaks capture
    return _shared["stream"]


def _shared_cublas(stream: cp.cuda.Stream) -> Cublas:
    if "cublas" not in _shared:
        _shared["cublas"] = Cublas(stream)
    return _shared["cublas"]


def scrub_chip() -> None:
    """Before a candidate's call or replay: `guards.scrub` (shared and local memory, registers), and
    the harness's own memory that lives as long as the worker and that no check reads back, rewritten
    with random bytes: the cuBLASLt workspaces (one per recent shape), the cuBLAS handle's workspace
    and the server hold's pinned block (`timing.hold_block`). A candidate can reach them only with a
    guessed offset, but whatever it kept there would outlive every call, replay and judging."""
    guards.scrub()
    for _, ws in _shared.get("lt", {}).values():
        buffers.randomize(ws)
    if "cublas" in _shared:
        buffers.randomize(_shared["cublas"].workspace)
    if (block := timing.hold_block()) is not None:
        buffers.randomize_at(*block)


def _shared_lt(p: Problem, k: int):
    """The cuBLASLt plan and its heuristic's algorithms for `p`, kept for the last few shapes."""
    from cudal2.harness.cublaslt import LtGemm
    plans = _shared.setdefault("lt", {})
    key = (p.M, p.N, p.K, k)
    if key not in plans:
        while len(plans) >= 4:
            old_lt, _ = plans.pop(next(iter(plans)))
            old_lt.close()
        ws = cp.empty(64 << 20, dtype=cp.uint8)
        lt = LtGemm(p.M, p.N, p.K, ws.data.ptr, ws.nbytes)
        lt.algorithms(k)
        plans[key] = (lt, ws)
    return plans[key][0]


@dataclass
class _Rig:
    """One timing mode's input sets, each runner's calls over them (by set index), and its guard."""
    sets: Sets
    core: dict
    gd: dict


class Judge:
    def __init__(self, req: JudgeRequest | None, cfg: Config):
        """`req` None judges nothing and times the baselines alone."""
        self.cfg, self.req = cfg, req
        self.stream = _shared_stream()
        self.cand = load(req) if req else None
        self.checks: dict = {}
        self._cublas: Cublas | None = None
        self._flush: cp.ndarray | None = None

    def close(self) -> None:
        if self.cand is not None and hasattr(self.cand, "close"):
            self.cand.close()   # unload the module: nothing of this candidate outlives its judging

    @property
    def cublas(self) -> Cublas:
        if self._cublas is None:
            self._cublas = _shared_cublas(self.stream)
        return self._cublas

    @property
    def flush(self) -> cp.ndarray:
        """The L2 flush buffer (2x the L2, zeros between flushes), one per judging."""
        if self._flush is None:
            self._flush = cp.empty(int(self.cfg.timing.flush_l2_factor * device().l2_bytes), dtype=cp.uint8)
        return self._flush

    # --- one call, with the per-call checks ------------------------------------------------
    def workspace_bytes(self, p: Problem) -> int:
        if self.cand is None:
            return 0
        try:
            n = self.cand.workspace_bytes(p.M, p.N, p.K)
        except Exception as e:
            raise Failed(Stage.LOAD, f"workspace size failed for {p}: {e}") from None
        if n > self.cfg.verify.max_workspace_bytes:
            raise Failed(Stage.LOAD, f"asks for {n} workspace bytes, more than the limit "
                                     f"{self.cfg.verify.max_workspace_bytes}")
        return n

    def call(self, t: Trial, stage: Stage, carried: bool = False) -> None:
        """Random workspace and C, one call, wait for the device, then inputs and canaries checked.
        `carried`: C and the workspace stay as the last call left them, as the library leaves them
        (the chip is still scrubbed: the harness's own work since that call ran there)."""
        v = self.cfg.verify
        a, b, c, w = t.ptrs
        if not carried:   # fresh workspace bytes and C values (a new key: they never repeat between calls)
            guards.Guard([t.c], t.p.K, ws=[w], ws_bytes=t.ws_bytes).prep()
        scrub_chip()   # nothing an earlier call left in shared or local memory or registers
        release_memory()  # nor in a free block of the pool
        # The L2 as a timed call finds it: C just written by the prep but flushed out, so no call
        # can tell verification from timing by how fast its own output or operands load.
        with self.stream:
            timing.flush_l2(self.flush)
        self.guarded_call(a, b, c, t.p, w, t.ws_bytes, stage, v.call_timeout_s)
        self.drain_device(stage, v.call_timeout_s)   # the device is idle after the call
        if not t.inputs_intact():
            raise Failed(Stage.INPUTS, "the call modified A or B")
        check_arena(t.arena, lambda i: Trial.NAMES[i], "")

    def guarded_call(self, a: int, b: int, c: int, p: Problem, w: int, wb: int, stage: Stage, timeout: float) -> None:
        beat(stage.value, timeout + 30)
        with self.stream:
            rc = self.cand.call(a, b, c, p.M, p.N, p.K, w, wb, self.stream.ptr)
            if rc != 0:
                # review 38: what earlier launches of a multi-kernel call enqueued must end, cleanly
                # (a hang or CUDA error is a fault), before the verdict and the module's unload
                self.wait(stage, timeout)
                self.drain_device(stage, timeout)
                raise Failed(stage, f"the call returned {rc} ({_error_name(rc)})")
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
    def verify(self, p: Problem, light: bool = False, carried: bool | None = None) -> None:
        """Every verification stage at `p`; `light`: the exact stage, the Gaussian and the cancelling
        trial only (for the many M values of an M-range; `trial_dists`), and the carried calls
        where `carried` (by default: where not light)."""
        try:
            self._verify(p, light, (not light) if carried is None else carried)
        except (cp.cuda.memory.OutOfMemoryError, cp.cuda.runtime.CUDARuntimeError) as e:
            # a shape the kernel's own claim adds (an M-range's ends) that does not fit: the claim's
            # failure, not the harness's (review 36: it left the judge as a "harness error", which
            # the reward reads as an infrastructure fault, and no later stage ran). cupy's pool
            # says so with OutOfMemoryError, a direct cudaMalloc with the runtime's status 2 (the
            # H100 run); any other runtime error is not this one
            if isinstance(e, cp.cuda.runtime.CUDARuntimeError) and e.status != _CUDA_ERROR_MEMORY_ALLOCATION:
                raise
            raise Failed(Stage.LOAD, f"the buffers or the reference of shape {p}, which the kernel declares, do "
                                     "not fit in device memory") from None

    def _verify(self, p: Problem, light: bool, carried: bool) -> None:
        v = self.cfg.verify
        t = Trial.make(p, self.workspace_bytes(p), v.guard_bytes)
        key = str(p)
        with self.stream:
            seed = t.fill("pm1")
            self.call(t, Stage.EXACT)
            ok, st = compare.exact(t.c, compare.reference(t.a, t.b))
            self.record(key, "exact", seed=seed, **st)
            if not ok:
                raise Failed(Stage.EXACT, f"{st['mismatches']} of {st['elements']} outputs differ from the exact "
                                          f"result at {p}")
            vendor = cp.empty_like(t.c)
            for dist in trial_dists(light, v.gaussian_trials):
                seed = t.fill(dist)
                self.call(t, Stage.GAUSSIAN)
                self.tolerance_check(t.a, t.b, t.c, vendor, Stage.GAUSSIAN, key, dist=dist, seed=seed,
                                     b_seed=t.b_seed,   # (no longer seed + 1: `Trial._seed`)
                                     ratio=v.uniform_error_ratio if dist == "uniform" else v.error_ratio)
            if not light:
                for r in range(v.repeat_calls):
                    seed = t.fill("normal")  # new contents, same pointers
                    self.call(t, Stage.REPEAT)
                    self.tolerance_check(t.a, t.b, t.c, vendor, Stage.REPEAT, key, call=r, seed=seed)
            if carried:
                for dist in CARRIED_DISTS:
                    self.carried_calls(t, vendor, key, dist)
            if not light:
                seed = t.fill("normal")
                self.call(t, Stage.DETERMINISM)
                first = t.c.copy()
                for d in range(1, v.determinism_calls):
                    self.call(t, Stage.DETERMINISM)
                    ok, st = compare.bitwise(t.c, first)
                    if not ok:
                        self.record(key, "determinism", seed=seed, **st)
                        raise Failed(Stage.DETERMINISM, f"call {d + 1} differs from call 1 in {st['differing']} "
                                                        "outputs on identical inputs (a race or order-dependent "
                                                        "reduction)")
        del t

    def carried_calls(self, t: Trial, vendor, key: str, dist: str = "normal") -> None:
        """Calls as the library makes them (review 53): its C and workspace come from the caching
        allocator as the last call left them, which every other call here rewrites first. A call,
        then 1 to `carry_calls` carried calls on the same inputs (their number drawn now), then one
        more after an element of A moved (`Trial.nudge`), then `carry_calls` to 2x that many more
        (at least `Trial.SLOTS` + 1), each on the next of the `Trial.SLOTS` A's and C's in turn, A
        with new contents (`Trial.rotate`), and before one of them, not the first, B changed in
        place (`Trial.new_b`: all of it, or one element) and a call on the A already there; each
        output, every A drawn since the fill and B checked in full after its call. Why the rotation (review 55): a
        kernel that told the library from the judge by a workspace record still valid beside an A
        it had not seen, or by the cycle of A pointers the bench's pool makes, met its condition
        nowhere in the judge and could compute coarsely, skip, defer or zero its operands there
        only; why B (reviews 56, 57): a copy of B kept in the workspace, keyed on its pointer or a
        few sampled elements, answers from stale weights once B changes, and a memo keyed on A alone
        answers the call after it with the output of the old B. A memo of C kept in the workspace or in C, keyed on
        pointers or on sampled contents, answers the nudged call with the stale result. What it
        does not catch: a kernel that waits for more calls, or a longer pointer cycle, than the
        judge makes (the product bench's checks are the second line: library/feed.py). `dist`: the
        chain's inputs (`CARRIED_DISTS`)."""
        seed = t.fill(dist)

        def checked(kept: bool = True, **info) -> None:   # one call (C and workspace kept), checked in full
            self.call(t, Stage.REPEAT, carried=kept)
            self.tolerance_check(t.a, t.b, t.c, vendor, Stage.REPEAT, key, seed=seed, dist=dist, **info)
        checked(kept=False, carried=0)
        rng = random.SystemRandom()
        same = rng.randint(1, self.cfg.verify.carry_calls)
        for r in range(1, same + 2):
            if r == same + 1:
                t.nudge()
            checked(carried=r, nudged=t.nudged)
        least = max(self.cfg.verify.carry_calls, Trial.SLOTS + 1)   # a cycle seen whole, and its first again
        rotations = rng.randint(least, 2 * least)
        new_b = rng.randrange(1, rotations)   # and B changed in place before one of them, not the first
        for r in range(rotations):
            if r == new_b:   # B changed, then one call on the same A (an A-keyed memo is stale)
                t.new_b(whole=rng.random() < 0.5)
                checked(new_b=True, slot=t.slot)
            a_seed = t.rotate()
            checked(rotated=r, slot=t.slot, a_seed=a_seed)
        t.settle()

    def tolerance_check(self, a, b, c, vendor, stage: Stage, key: str, ratio: float | None = None, **info) -> None:
        self.cublas.tn(a, b, vendor)
        ratio = ratio or self.cfg.verify.error_ratio
        ok, st = compare.tolerance(c, compare.reference(a, b), vendor, ratio, self.cfg.verify.max_error_ratio)
        self.record(key, stage.value, **info, **st)
        if not ok:
            if st["nonfinite"]:
                raise Failed(stage, f"{st['nonfinite']} outputs are NaN/Inf ({_info(info)})")
            raise Failed(stage, f"error {st['rel']:.2e} (max {st['max']:.2e}) vs cuBLAS {st['vendor_rel']:.2e} "
                                f"(max {st['vendor_max']:.2e}): over {ratio}x / "
                                f"{self.cfg.verify.max_error_ratio}x ({_info(info)})")

    def record(self, key: str, name: str, **stats) -> None:
        self.checks.setdefault(key, {}).setdefault(name, []).append(stats)

    @contextmanager
    def phase(self, name: str):
        """Wall seconds per phase of the judging, in checks["seconds"] (harness throughput, not a verdict)."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            s = self.checks.setdefault("seconds", {})
            s[name] = s.get(name, 0.0) + time.monotonic() - t0

    def time(self, p: Problem) -> dict:
        """Both timing modes beside the baselines. Each runner's offline graph is one pass over input
        sets that are all distinct (no call in a replay sees another's inputs); before every replay,
        untimed, its sets are made fresh (operand X regenerated, workspaces and C randomized) and the
        L2 flushed; after it, every call's output is spot-checked. Server mode runs on sets of its
        own (`timing.server_sets`): each of its calls follows an L2 flush, so more sets would not
        make a call colder, only its untimed preparation and checks longer."""
        tc, dev = self.cfg.timing, device()
        timeout = self.cfg.verify.call_timeout_s
        regen_a = p.M <= p.N  # regenerate the smaller operand: least untimed work
        with_bt = "cublas" in tc.baselines
        ws = self.workspace_bytes(p)
        guard = self.cfg.verify.guard_bytes
        # Per set: A, B, C, the baselines' C, (Bᵀ), each behind a gap of < 2 guards, and the workspace.
        set_bytes = (p.min_bytes + 2 * p.M * p.N + 2 * p.K * (p.N if regen_a else p.M) + (2 * p.N * p.K if with_bt else 0)
                     + 12 * guard)
        # Enough distinct sets that they exceed the L2 and that one pass lasts about min_replay_ms
        # (at the vendor's speed: a pass of a slower candidate lasts longer, which only helps).
        want = max(math.ceil(tc.rotation_l2_factor * dev.l2_bytes / p.min_bytes),
                   math.ceil(tc.min_replay_ms * 1e-3 / self.vendor_call_s(p, timeout)))
        free = cp.cuda.runtime.memGetInfo()[0]
        # Sized without the workspace: a candidate's declared workspace never buys it fewer sets
        # (a warmer L2, fewer snapshot nodes); one too large to sit beside them fails instead.
        nsets = max(2, min(tc.max_sets, want, int(free * 0.5 // set_bytes)))
        if nsets * (set_bytes + ws) > free * 0.5:
            raise Failed(Stage.TIMING, f"a workspace of {ws} bytes per call does not fit beside the {nsets} "
                                       "timing sets this shape needs")
        rejudge = bool(self.req and self.req.rejudge)
        fmode = "uniform" if rejudge else TIMED_DIST
        rng = random.Random()
        self.checks.setdefault("timing_sets", nsets)
        beat("timing", 600)
        lt = None
        if {"cublaslt", "cublaslt_autotune"} & set(tc.baselines):
            lt = _shared_lt(p, tc.autotune_k)
        # Both operands in the one timed distribution (a re-judge's second opinion: uniform). The
        # cancelling trial is verification's alone: its inputs can be told apart by looking at them,
        # so inside timing it caught only kernels that the verification trial catches anyway.
        order: list[str] = []

        def rig(n: int) -> "_Rig":
            """`n` input sets in fresh arenas, each runner's calls over them, and its guard."""
            with self.stream, self.phase("sets"):
                sets, seeds = self.make_sets(p, n, with_bt, regen_a, fmode, ws if self.cand else None, guard)
                release_memory()   # no free block of the pool stays mapped for a call to keep things in
                core: dict[str, timing.Runner] = {}
                if self.cand:
                    def cand(i: int) -> None:
                        rc = self.cand.call(sets.A[i].data.ptr, sets.B[i].data.ptr, sets.C[i].data.ptr, p.M, p.N,
                                            p.K, sets.W[i], ws, self.stream.ptr)
                        if rc != 0:   # earlier launches of the call may still run, maybe inside a
                            # capture no wait may break: a fault, so the process goes, not the module alone
                            raise Failed(Stage.TIMING, f"the call returned {rc} ({_error_name(rc)}) in a timed call",
                                         Fault.CUDA_ERROR)
                    core["candidate"] = cand
                core.update(baseline_runners(tc.baselines, sets, self.stream, self.cublas, lt, tc.autotune_k,
                                             tc.min_replay_ms, tc.max_graph_calls, timeout))
                if not order:
                    order.extend(core)
                    rng.shuffle(order)   # no fixed runner order to adapt to
                gd = {n: guards.Guard(sets.C if n == "candidate" else sets.Cb, p.K,
                                      X=sets.A if regen_a else (sets.Bt if n == "cublas_nn" else sets.B),
                                      transposed=not regen_a and n == "cublas_nn", regen=1 if regen_a else 2,
                                      fixed=seeds, fmode=fmode, xmodes=lambda: fmode,
                                      ws=sets.W if n == "candidate" else None, ws_bytes=ws,
                                      F=(sets.B if regen_a else sets.A) if n == "candidate" else None)
                      for n in order}
                self.drain_device(Stage.TIMING, timeout)
            return _Rig(sets, core, gd)

        flush = self.flush

        def fresh(r: _Rig, n: str, i: int | None = None) -> None:
            # Before every replay, every set; before a server call, a baseline's set, and for
            # the candidate every set: no C, workspace or regenerated operand keeps what a call
            # left there for a later one (the baselines' preps rewrite the shared operand too,
            # so the candidate's check after its call needs every operand drawn by its own).
            if i is None or n == "candidate":
                r.gd[n].prep()
            else:
                r.gd[n].prep(i, 1)
            if n == "candidate":
                scrub_chip()   # no call finds on the chip what an earlier one left there
            if i is None:   # (a server call's flush is the server loop's own)
                timing.flush_l2(flush)   # the sets come from memory, as in a run over more data than the L2 holds

        def checked(r: _Rig, n: str, first: int = 0, count: int | None = None,
                    snaps: snapshots.Snapshots | None = None) -> None:
            """After a runner's replay or call: its snapshots compared with its final outputs
            (a replay), its spot check; for the candidate, enqueued only once its calls are done
            (the check's positions exist nowhere while they run), and then nothing it could
            have left for a later call may remain: both operands of every set as the
            generator gave them, the arena's background untouched."""
            g = r.gd[n]
            if snaps is not None:
                snaps.verify()
            if n != "candidate":
                g.spot(first, count)
                return
            self.drain_device(Stage.TIMING, timeout)
            g.spot(first, count)
            # Both operands after every replay and call, the regenerated one too although it is
            # drawn afresh before the next: no replay may differ from the final one, whose full
            # check and re-run read it, in what a call may do to its inputs.
            self.check_between_calls(g, r.sets)
            failed, bad, authentic = g.log.read(g.spots)   # read now: no later call gets to rewrite it
            if failed:
                raise Failed(Stage.TIMING, f"a spot-checked output is wrong in a timed call: input set {bad.set}, "
                                           f"C[{bad.row}][{bad.col}] = {bad.got:.4g}, want {bad.want:.4g}")
            if not authentic:
                raise Failed(Stage.TIMING, f"the log of {g.spots} spot checks is not what they leave: a check did not "
                                           "run, found a wrong output, or the log was rewritten")
            if snaps is not None and snaps.mismatches():
                raise Failed(Stage.TIMING, f"{snaps.mismatches()} outputs sampled the moment their call ended differ "
                                           "from the replay's final outputs: a later call completed or changed them")

        times: dict[str, dict] = {}
        with self.stream:
            if "offline" in tc.modes:
                r = rig(nsets)
                graphs = {}
                # Behind every call of every graph a snapshot node, each armed independently,
                # `snapshot_calls` per replay on average: in the candidate's untimed last replay
                # and re-run too, so that these
                # look to its calls like any timed replay (an armed node lengthens the gap between
                # two calls: arming all of them would tell those replays apart).
                snaps = {n: snapshots.Snapshots(r.sets.C if n == "candidate" else r.sets.Cb, self.stream, nsets)
                         for n in order}
                with faults(Stage.TIMING), self.phase("capture"):
                    for n in order:  # an eager pass (warm-up, and checked like the rest), then the capture
                        fresh(r, n)
                        timing.round_time_s(self.stream, r.core[n], nsets, timeout)
                        checked(r, n)
                        try:
                            graphs[n] = (timing.capture(self.stream, r.core[n], list(range(nsets)),
                                                        after=snaps[n].capture), nsets)
                        except (timing.CaptureError, driver.DriverError) as e:
                            raise Failed(Stage.TIMING, f"not stream-ordered: {e}") from None

                def replay_prep(n: str) -> None:
                    fresh(r, n)
                    snaps[n].arm(graphs[n][0], tc.snapshot_calls)
                self.drain_device(Stage.TIMING, timeout)
                beat("timing", 600)
                with faults(Stage.TIMING), self.phase("offline"):
                    times["offline"] = timing.offline(self.stream, graphs, tc.repeats, timeout,
                                                      before={n: (lambda n=n: replay_prep(n)) for n in order},
                                                      after={n: (lambda n=n: checked(r, n, snaps=snaps[n]))
                                                             for n in order})
                expected = {n: tc.repeats + 2 for n in order}   # the eager pass, the warm-up, the timed replays
                if self.cand:   # last: the sets now hold its outputs for the full check below
                    replay_prep("candidate")
                    graphs["candidate"][0].launch(self.stream)
                    checked(r, "candidate", snaps=snaps["candidate"])
                    expected["candidate"] += 1
                self.drain_device(Stage.TIMING, timeout)
                self.check_logs(r.gd, order, {n: 0 for n in order}, expected, "offline", snaps)
                if self.cand:
                    with faults(Stage.TIMING), self.phase("full_checks"):
                        sample = self.check_sets(r.sets, "offline timed calls", range(nsets))
                        self.check_replay_determinism(graphs["candidate"][0], r.gd["candidate"], r.sets, sample, flush,
                                                      snaps["candidate"])
                        self.check_harness_buffers(r.sets, regen_a, flush)
                del r, graphs, snaps
            if "server" in tc.modes:
                r = rig(min(nsets, tc.server_sets))
                with faults(Stage.TIMING), self.phase("server"):
                    times["server"] = timing.server(self.stream, {n: r.core[n] for n in order}, len(r.sets),
                                                    tc.server_calls, tc.server_gap_us, flush, timeout,
                                                    before={n: (lambda i, n=n: fresh(r, n, i)) for n in order},
                                                    after={n: (lambda i, n=n: checked(r, n, i, 1)) for n in order},
                                                    seed=rng.getrandbits(32))
                self.drain_device(Stage.TIMING, timeout)
                self.check_logs(r.gd, order, {n: 0 for n in order}, {n: tc.server_calls for n in order}, "server")
                if self.cand:
                    with faults(Stage.TIMING), self.phase("full_checks"):
                        self.check_server_call(r, fresh, checked, flush)
                    self.check_harness_buffers(r.sets, regen_a, flush)
                del r
            if lt is not None:
                self.lt_algos = {"heuristic_count": len(lt), "autotune_choice": baselines_autotuned(p)}
        return times

    def vendor_call_s(self, p: Problem, timeout: float) -> float:
        """One cuBLAS call's time at `p` (events, after a warm-up): the yardstick for sizing the sets."""
        with self.stream:
            a, b, c = (cp.empty(s, cp.float16) for s in ((p.M, p.K), (p.N, p.K), (p.M, p.N)))
            buffers.fill(a, "normal", 1)
            buffers.fill(b, "normal", 2)
            self.cublas.tn(a, b, c)
            with faults(Stage.TIMING):
                t = timing.round_time_s(self.stream, lambda i: self.cublas.tn(a, b, c), 3, timeout) / 3
        return max(t, 1e-6)

    def check_logs(self, gd: dict[str, guards.Guard], names: list[str], before: dict[str, int],
                   expected: dict[str, int], mode: str, snaps: dict | None = None) -> None:
        """Every call of every runner was spot-checked, and none failed, nor (offline) changed an
        output after its call (a baseline's failure is the harness's own bug, not the
        candidate's: it raises)."""
        for n in names:
            want = before[n] + expected[n]
            failed, first, authentic = gd[n].log.read(want)
            done = gd[n].spots - before[n]   # enqueued; `authentic` says each ran, clean
            if n != "candidate":
                late = snaps[n].mismatches() if snaps else 0
                if failed or done != expected[n] or not authentic or late:
                    why = (f"baseline {n} {mode}: {failed} spot failures, {done} of {expected[n]} calls checked"
                           + ("" if authentic else ", its check log not what its checks leave")
                           + (f", {late} outputs changed after their call" if late else ""))
                    if self.cand is not None:  # the only untrusted code that ran beside it: its interference
                        raise Failed(Stage.TIMING, f"{why}: the vendor's outputs went wrong beside this candidate")
                    raise RuntimeError(f"harness: {why} (first: {first})")
                continue
            self.record("timing", f"spot_{mode}", checked=done, expected=expected[n], failed=failed)
            if failed:
                raise Failed(Stage.TIMING, f"{mode}: {failed} spot-checked outputs wrong in timed calls; first in check "
                                           f"{first.check}, input set {first.set}: C[{first.row}][{first.col}] = "
                                           f"{first.got:.4g}, want {first.want:.4g} (inputs change between timed calls)")
            if done != expected[n]:
                raise Failed(Stage.TIMING, f"{mode}: {done} spot checks enqueued where {expected[n]} calls ran")
            if not authentic:
                raise Failed(Stage.TIMING, f"{mode}: the log of the spot checks is not what {expected[n]} clean checks "
                                           "leave: a check did not run, or the log was rewritten")

    def check_between_calls(self, guard: guards.Guard, sets: Sets) -> None:
        """After the candidate's timed calls (the device drained): both operands of every set are
        what the generator gave them and no byte of the arena's background changed. Between two
        replays or calls the harness rewrites
        everything else a call can reach (C, workspaces, the regenerated operand), so nothing a
        call leaves can reach a later one."""
        bad = guard.inputs_changed()
        if bad:
            raise Failed(Stage.INPUTS, f"{bad} elements of A or B changed during timed calls")
        check_arena(sets.arena, lambda i: sets.names[i], " during timed calls")

    def check_harness_buffers(self, sets: Sets, regen_a: bool, flush: cp.ndarray) -> None:
        """After timing, what no candidate buffer leads to but a stray write could still hit: the
        baselines' fixed Bᵀ is still B's transpose, the baselines' arena background is intact, and
        the L2 flush buffer holds the zeros the last flush left. (The candidate's own operands and
        arena are checked after each of its replays and calls: `check_between_calls`.)"""
        for i, (b, bt) in enumerate(zip(sets.B, sets.Bt) if regen_a else ()):   # else Bᵀ is regenerated
            if bt is not b and not bool((bt == b.T).all()):
                raise Failed(Stage.INPUTS, f"the baselines' transposed B of input set {i} changed during timing")
        check_arena(sets.spare, lambda i: "a baseline buffer", " during timing")
        if int(cp.count_nonzero(flush)):
            raise Failed(Stage.CANARY, "a timed call wrote into the harness's L2 flush buffer")

    def make_sets(self, p: Problem, n: int, with_bt: bool, regen_a: bool, fmode: str, ws: int | None,
                  gap: int) -> tuple[Sets, list[int]]:
        """`n` input sets, every buffer a region of an arena (random order, random gaps, random
        background), laid out as verification's buffers are. The operand that
        `regen_a` says stays fixed is filled in `fmode` from the returned seeds; the other is
        regenerated before every call. `ws`: the candidate's workspace bytes per set (None: no
        candidate)."""
        shapes = {"A": (p.M, p.K), "B": (p.N, p.K), "Bt": (p.K, p.N), "C": (p.M, p.N), "Cb": (p.M, p.N)}
        got: dict[tuple[int, str], object] = {}

        def arena(kinds: list[str], with_ws: bool) -> tuple[buffers.Arena, list[str]]:
            regions = [(i, k, 2 * math.prod(shapes[k])) for i in range(n) for k in kinds]
            regions += [(i, "W", ws) for i in range(n)] if with_ws else []
            a = buffers.Arena([r[2] for r in regions], gap)
            got.update({(i, k): (a.view(j, cp.float16, shapes[k]) if k != "W" else a.ptr(j))
                        for j, (i, k, _) in enumerate(regions)})
            return a, [f"{k} of input set {i}" for i, k, _ in regions]

        # The candidate's buffers in one arena; the baselines' own (their C, Bᵀ) in another, whose
        # address no candidate buffer gives away: nothing there is left for a candidate's later call.
        cand_arena, names = arena(["A", "B", "C"], ws is not None)
        base_arena, _ = arena(["Cb"] + (["Bt"] if with_bt else []), False)
        s = Sets([], [], [], [], [], arena=cand_arena, names=names, spare=base_arena)
        seeds = [buffers.new_seed() for _ in range(n)]
        for i in range(n):
            a, b = got[(i, "A")], got[(i, "B")]
            guards.fill(b if regen_a else a, seeds[i], fmode)
            guards.fill(a if regen_a else b, buffers.new_seed(), fmode)   # until the first prep
            s.A.append(a); s.B.append(b); s.C.append(got[(i, "C")]); s.Cb.append(got[(i, "Cb")])
            if with_bt:
                got[(i, "Bt")][...] = b.T
            s.Bt.append(got[(i, "Bt")] if with_bt else b)
            if ws is not None:
                s.W.append(got[(i, "W")])
        return s, seeds

    def check_sets(self, sets: Sets, what: str, indices) -> list[int]:
        """Check a random sample of the sets (always the first and the last) in full; the spot checks
        have already looked at every set after every call. Returns the sample."""
        idx = list(indices)
        sample = sorted(set(random.sample(idx, min(len(idx), 8))) | {idx[0], idx[-1]})
        vendor = cp.empty_like(sets.C[0])
        for i in sample:
            try:
                # Uniform inputs (a re-judge) take the positive-mean bound, as in verification.
                uniform = bool(self.req and self.req.rejudge)
                self.tolerance_check(sets.A[i], sets.B[i], sets.C[i], vendor, Stage.TIMING, "timing", set=i, what=what,
                                     ratio=self.cfg.verify.uniform_error_ratio if uniform else None)
            except Failed as f:
                raise Failed(Stage.TIMING, f"{what}: {f.reason}") from None
        return sample

    def check_server_call(self, r: _Rig, fresh, checked, flush: cp.ndarray) -> None:
        """One more server call of the candidate, made as the others are (its sets fresh, the chip
        scrubbed, an idle gap, the L2 flushed), its output checked in full; then the same call on
        the same inputs (C and workspace fresh, the chip scrubbed): bit for bit the same output.
        Server calls are held to the full check and the determinism of verification too."""
        tc, timeout = self.cfg.timing, self.cfg.verify.call_timeout_s
        i = random.randrange(len(r.sets))
        g = r.gd["candidate"]
        with self.stream:
            fresh(r, "candidate", i)
            self.wait(Stage.TIMING, timeout)
            timing.idle(random.expovariate(1.0 / (tc.server_gap_us * 1e-6)) if tc.server_gap_us else 0.0)
            release = timing.hold(self.stream)   # as in the timed server calls
            timing.flush_l2(flush)
            r.core["candidate"](i)
            release()
        checked(r, "candidate", i, 1)
        self.check_sets(r.sets, "a server call", [i])
        kept = r.sets.C[i].copy()
        with self.stream:
            g.prep(regen_x=False)
            scrub_chip()
            timing.flush_l2(flush)
            r.core["candidate"](i)
            self.wait(Stage.TIMING, timeout)
        self.drain_device(Stage.TIMING, timeout)
        self.check_between_calls(g, r.sets)
        ok, st = compare.bitwise(r.sets.C[i], kept)
        if not ok:
            self.record("timing", "determinism", set=i, mode="server", **st)
            raise Failed(Stage.DETERMINISM, f"a server call repeated on identical inputs differs from the one before it "
                                            f"in {st['differing']} outputs (a race or order-dependent reduction)")

    def check_replay_determinism(self, graph, guard: guards.Guard, sets: Sets, sample: list[int],
                                 flush: cp.ndarray, snaps: snapshots.Snapshots) -> None:
        """The candidate's graph replayed once more on the same inputs (C and workspaces made fresh,
        the chip scrubbed, the L2 flushed, snapshots armed, as before every replay) gives
        the sampled sets' outputs bit for bit again: timed calls are held to verification's
        determinism too."""
        timeout = self.cfg.verify.call_timeout_s
        with self.stream:
            kept = {i: sets.C[i].copy() for i in sample}
            guard.prep(regen_x=False)
            scrub_chip()
            timing.flush_l2(flush)
            snaps.arm(graph, self.cfg.timing.snapshot_calls)
            graph.launch(self.stream)
            snaps.verify()
            self.wait(Stage.TIMING, timeout)
        self.drain_device(Stage.TIMING, timeout)
        self.check_between_calls(guard, sets)
        if snaps.mismatches():
            raise Failed(Stage.TIMING, f"{snaps.mismatches()} outputs sampled the moment their call ended differ from "
                                       "the re-run's final outputs: a later call completed or changed them")
        for i in sample:
            ok, st = compare.bitwise(sets.C[i], kept[i])
            if not ok:
                self.record("timing", "determinism", set=i, **st)
                raise Failed(Stage.DETERMINISM, f"a timed replay on identical inputs differs from the one before it in "
                                                f"{st['differing']} outputs of input set {i} (a race or order-dependent "
                                                "reduction)")


def check_arena(arena: buffers.Arena, name, when: str) -> None:
    """No byte of `arena` outside its buffers changed (`name(i)` names region i in the message)."""
    bad, first = arena.damage()
    if bad:
        i, past = arena.where(first)
        where = f"{past} bytes past the end of {name(i)}" if i >= 0 else f"{past} bytes into the arena"
        raise Failed(Stage.CANARY, f"{bad} bytes outside every buffer changed{when}, the first {where}")


def _error_name(rc: int) -> str:
    try:
        return cp.cuda.runtime.getErrorName(rc)
    except Exception:
        return "unknown error"


def _info(info: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in info.items() if k not in ("seed", "b_seed"))


def judge(req: JudgeRequest) -> dict:
    """Worker entry point: the EvalResult fields this stage decides (stage, ok, reason, fault,
    checks, times, speedup, tflops, floor_fraction, gpu)."""
    cfg = req.cfg
    p = Problem(req.M, req.N, req.K)
    t0 = time.monotonic()
    out: dict = {"stage": Stage.LOAD.value, "ok": False, "reason": "", "fault": None, "checks": {}}
    j = None
    try:
        dev = device()
        out["gpu"] = {"name": dev.name, "driver": dev.driver, "cc": list(dev.cc), "sm_count": dev.sm_count}
        if req.rejudge:  # fresh pointers: shift where this process's buffers land
            _shift = cp.empty(random.randrange(1, 256) << 20, dtype=cp.uint8)  # noqa: F841
        j = Judge(req, cfg)
        with j.phase("verify"):
            # One deadline for all the shapes: every call may run up to call_timeout_s and beats the
            # heartbeat, so a kernel slow on purpose times the count of an M-range's light checks
            # (up to 128 + four tiles of 512) by two calls of ~10 s each: hours (review 41)
            until = time.monotonic() + cfg.verify.max_verify_s
            shapes = [(p, False)] + [(Problem(*s), False) for s in req.verify_shapes if tuple(s) != (p.M, p.N, p.K)]
            # a few interior M values, drawn afresh, get the carried calls too: a kernel that took
            # a library-only path at M values the full checks never use would meet them (review 55)
            carried = set(random.SystemRandom().sample(range(len(req.light_shapes)),
                                                       min(cfg.verify.light_carried, len(req.light_shapes))))
            for i, (shape, light) in enumerate(shapes + [(Problem(*s), True) for s in req.light_shapes]):
                if time.monotonic() > until:
                    raise Failed(Stage.LOAD, f"verifying the {len(shapes) + len(req.light_shapes)} shapes the kernel "
                                             f"declares took over {cfg.verify.max_verify_s:.0f} s")
                j.verify(shape, light=light, carried=not light or i - len(shapes) in carried)
        if req.time_it:
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
    except BaseException:
        # an exception of the judge's own may leave the candidate's launches running: no unload
        # under them, and the process is replaced, as the task judge does (review 39)
        out["fault"] = "harness"
        request_exit()
        raise
    finally:
        out["checks"] = j.checks if j else {}
        out["elapsed_s"] = time.monotonic() - t0
        if j is not None and not out.get("fault"):
            j.close()
    if out.get("fault") or req.kind != "cubin":
        request_exit()  # a hang or sticky error leaves the context unusable; host code gets a fresh process
    else:
        release_memory()
    return out


def release_memory() -> None:
    """Give all the pool's free blocks back to the driver: freed memory is then unmapped, not
    somewhere a call could keep things for a later one (the buffers calls see are arenas, one
    cudaMalloc each, so this costs little)."""
    cp.get_default_memory_pool().free_all_blocks()


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
