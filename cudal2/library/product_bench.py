"""`cudal2 library bench`: the library measured where users call it, `cudal2.linear` against
`torch.nn.functional.linear` (and, with `cupy`, `cudal2.matmul` on cupy arrays against
`cupy.matmul`), in a fresh process.

Guarantees:
- every entry's shape is measured, and each extra shape given (`shapes`: e.g. the dev set, whose
  shapes without an entry measure what a user pays there, the vendor through the library), on
  Gaussian inputs (never zeros), after checking that the two
  agree; every timed call reads A contents no earlier call read (`feed.Feed`, review 53: the
  library leaves C and the workspace as the last call left them, so a memo there must find
  nothing to reuse), and what our calls returned, timed or not, is checked after each round,
  the operands first (`feed.Feed.check`; `timed_checks`; a failure clears `agree`, so `record`
  serves nothing). Each eager or graph call writes its own A right before it, on its stream,
  from keys drawn when the write runs (`library.stamp`, review 58: no output can be computed
  ahead of its call); both sides' times include that write (`stamped`), and the row records what
  one write alone takes (`stamp_us`, graph mode).
  With `serve_all` this
  process serves every entry, whatever the manifest says, so the bench can decide what is served;
  without it, what the manifest serves, as a user gets it (the vendor's shapes then measure the
  fallback's cost). Whether the library call ran the entry's
  kernel (`lib.stats()`) is recorded beside each ratio;
- three modes, each as paired rounds (the two callers alternate, each round gives one ratio
  t_vendor / t_library, the median of the ratios is reported): eager (back-to-back calls, host
  overhead included; 50 a round, fewer in more rounds where they would take over ROUND_MS:
  `calls_for`, `rounds_for`),
  graph (the same calls captured in a CUDA graph, afresh each round, and replayed), flushed (one
  call after an L2 flush and an idle GPU: the latency of a lone request, the host's launch path
  included, which after an idle spell is most of the difference at 1-2 ms shapes:
  eval/cold_start_probe.py);
  beside each ratio, each side's median time of one call (`<mode>_us`);
- at decode shapes (M <= 16, where B streams and the bar is HBM), a device copy of B's bytes timed
  the same way (graph, flushed), and each side's read rate of B as % of the copy's read+write
  rate (`copy`);
- all timing is by CUDA events on the caller's current stream (torch's, or cupy's for cupy rows;
  cupy's cuBLAS cannot be captured, so a cupy row's graph mode is None with the reason); the
  first library call of the process is timed too (`first_call_ms`: loading every served binary
  and registering it);
- `compare_libraries` times one library against another through `Library.linear` in the same
  three modes, its rounds paced as the bench's (`paced_modes`) (a reordered cubin against the
  shipped one: eval/sass_product.py);
- `run` writes one JSON line per shape as it is measured, so a stopped run keeps what it measured;
  with `resume` it keeps those rows and measures only the shapes they lack (`remaining`). Each
  row's ratios are paired inside one process, so rows from two processes stand side by side.

Does not: change the manifest (`record` does, for `--update`), or judge correctness beyond the
agreement check (that is the harness's job).
"""

from __future__ import annotations

import contextlib
import json
import math
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

from cudal2.harness.streams import cupy_stream
from cudal2.library.feed import Feed, Rerun, Snapshot, pool_size
from cudal2.library.stamp import gauss_fill, mask   # (the pool's fills and the rerun's mask: library/stamp.py)

BANDS = ((0, 30, "below 2^30"), (30, 36, "2^30-2^35"), (36, 99, "2^36 and above"))


def band(M: int, N: int, K: int) -> str:
    f = math.log2(2 * M * N * K)
    return next(name for lo, hi, name in BANDS if lo <= f < hi)


def _paired(ours, theirs, rounds: int, run_one, length=lambda: 1) -> tuple[float, float, float]:
    """(median of the per-round ratios t(theirs) / t(ours), median t(ours), median t(theirs)), ms a
    call; each round's calls `length()`, the same for both callers, and `run_one(f, n)` the time
    of n calls of f."""
    ratios, t_ours, t_theirs = [], [], []
    for r in range(rounds):
        n = length()
        order = (ours, theirs) if r % 2 == 0 else (theirs, ours)   # no caller always goes first
        t = {id(f): run_one(f, n) / n for f in order}
        ratios.append(t[id(theirs)] / t[id(ours)])
        t_ours.append(t[id(ours)])
        t_theirs.append(t[id(theirs)])
    return statistics.median(ratios), statistics.median(t_ours), statistics.median(t_theirs)


def _flush(buf) -> None:
    """The judge's L2 flush (`timing.flush_l2`) over `buf` (a cupy byte buffer of twice the L2), on
    cupy's current stream: a plain write of the buffer left the lines a kernel loaded with an
    evict_last policy in the L2 (review 65), so a "cold" call was warm where it read them."""
    from cudal2.harness import timing
    timing.flush_l2(buf)


class TorchClock:
    """Events, flush and graphs on torch's current stream."""

    def __init__(self, torch, flush):
        self.t, self.flush = torch, flush
        self.warm = None   # how `graph` readied its last graph: "upload" (not run) or "replay"

    def time(self, work) -> float:
        e0, e1 = self.t.cuda.Event(enable_timing=True), self.t.cuda.Event(enable_timing=True)
        e0.record()
        work()
        e1.record()
        e1.synchronize()
        return e0.elapsed_time(e1)

    def idle_cold(self) -> None:
        import cupy as cp
        with cupy_stream(self.t.cuda.current_stream().cuda_stream):
            _flush(cp.from_dlpack(self.flush))   # the L2 holds none of the next call's data
        self.t.cuda.synchronize()   # the GPU goes idle...
        time.sleep(1e-5)            # ...for a while, as between requests

    def graph(self, work):
        torch = self.t
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            work()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            work()
        # A new graph's first launch also uploads it (more nodes, more cost), so it is uploaded
        # untimed; not replayed: a replay of the graph the timed one repeats showed a kernel its
        # calls, their number and where the bench's snapshot sits (review 56). Where torch gives
        # no handle to the graph, or the upload fails, it is replayed once, as before, and the
        # row says so (`graph_warm`)
        from cudal2.harness import driver
        try:
            driver.graph_upload(g.raw_cuda_graph_exec(), torch.cuda.current_stream().cuda_stream)
            torch.cuda.current_stream().synchronize()
            self.warm = "upload"
        except (AttributeError, RuntimeError, OSError):   # (driver.DriverError is a RuntimeError)
            g.replay()
            self.warm = "replay"
        return g.replay


class CupyClock:
    """The same on cupy's current stream (cupy.cuda.Event, a cupy stream capture)."""

    def __init__(self, cp, flush):
        self.cp, self.flush = cp, flush
        self.warm = None

    def time(self, work) -> float:
        cp = self.cp
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        work()
        e1.record()
        e1.synchronize()
        return cp.cuda.get_elapsed_time(e0, e1)

    def idle_cold(self) -> None:
        _flush(self.flush)
        self.cp.cuda.Device().synchronize()
        time.sleep(1e-5)

    def graph(self, work):
        cp = self.cp
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            work()                  # warm-up outside the capture (allocator, handles)
            s.synchronize()
            s.begin_capture()
            try:
                work()
            finally:
                g = s.end_capture()
        g.upload(cp.cuda.get_current_stream())   # untimed and not run, as in TorchClock.graph
        cp.cuda.get_current_stream().synchronize()
        self.warm = "upload"
        return lambda: g.launch(cp.cuda.get_current_stream())


def many(f, calls: int) -> None:
    """`calls` calls of f back to back, each output dropped here as it comes (a `feed.Feed` caller
    keeps its own, within `Feed.round_cap`'s bytes: kept here, the calls of a wide layer filled the
    GPU)."""
    for _ in range(calls):
        f()


def lone(clock, f) -> float:
    """ms of one call of f after an L2 flush and an idle GPU (the flushed mode's measurement)."""
    clock.idle_cold()
    return clock.time(f)


def modes(clock, ours, theirs, rounds: int, calls: int, use=None, flushed_rounds: int | None = None,
          feed=None) -> dict:
    """The three modes as paired ratios t(theirs) / t(ours): eager (`calls` back-to-back calls; with
    a feed, a length drawn for each round up to `calls`), graph (the same calls, captured afresh each
    round, replayed), flushed (one call after an L2
    flush and an idle GPU; `flushed_rounds` rounds, by default 3x the rounds, since one call is
    noisier). `use(f)`, when given, runs
    before every use of caller f and outside its timing (e.g. making f's library the dispatcher's). A
    caller that cannot be captured (cupy's cuBLAS in some versions) gives `graph` None and the
    reason in `graph_error`. With a `feed` (`feed.Feed`, whose callers `ours` and `theirs` are),
    each timing, once its graph is captured, is preceded by `feed.fresh()` and followed by
    `feed.check()`, both untimed: no timed call sees contents an earlier call saw, and what `ours`
    returned in every timed round (its last output, outputs drawn after it ran, and a few elements
    of one drawn call's output copied right behind that call) is compared with the reference, once
    the operands are found intact, and what the untimed calls before it wrote is checked alike
    (`theirs` too, so both sides do the same work between timed regions)."""
    use = use or (lambda f: None)
    if feed:   # a stamped pass longer than the pool would write an A before an earlier call's check
        calls = min(calls, feed.round_cap)

    def timed(make, measure=clock.time, graph=False, stamp=False):
        def one(f, n):
            use(f)
            if feed:
                feed.begin(n, stamp=stamp)
            work = make(f, n)   # a graph is captured (and uploaded) here, on the contents before...
            if feed and graph and feed.stamping and getattr(clock, "warm", None) == "replay":
                # the replay rewrote the warm-up pass's A's before anything checked what it wrote,
                # so nothing would check that pass (review 59): no graph mode without an upload
                feed.commit()   # (the replay ran the captured writes)
                raise RuntimeError("a stamped graph round needs cuGraphUpload: its replay fallback leaves the warm-up unchecked")
            if feed:
                # what the untimed calls wrote is checked too: a graph's warm-up pass, and its
                # capture's buffers where the clock replayed it (an uploaded graph ran nothing yet)
                feed.check(untimed=True, last_pass_ran=not graph or getattr(clock, "warm", None) != "upload")
                feed.fresh()  # ...these, which only the timed calls see
            t = measure(work)
            if feed:
                feed.check(per_call_ms=t / n, time=clock.time)   # (the flushed mode's n is 1: `_paired`)
            return t
        return one

    row: dict = {}
    # With a feed, each round's length is drawn (`Feed.length`), so no kernel knows a round's last call
    length = (lambda: feed.length(calls)) if feed else (lambda: calls)
    new_weights = feed.new_weights if feed else (lambda: None)   # before each mode (`Feed.new_weights`)

    def record(mode: str, paired: tuple[float, float, float]) -> None:
        # the ratio, and each side's median time of one call (µs) beside it
        row[mode] = paired[0]
        row[f"{mode}_us"] = {"ours": 1e3 * paired[1], "theirs": 1e3 * paired[2]}

    new_weights()
    # back-to-back calls (eager, graph) write each A right before its call where the feed can
    # (`Feed.begin`'s stamp): no output of the round can be computed ahead of its call (review 58)
    record("eager", _paired(ours, theirs, rounds, timed(lambda f, n: lambda: many(f, n), stamp=True), length))
    new_weights()
    try:
        # Each round captures its own graphs: where a replay's time moves with the capture (its
        # pool's addresses), one capture per side read as a steady ±3% at a 20 µs call, A/A
        # (eval/aa_probe.py); a capture per round puts that spread inside the median. The clock
        # uploads each new graph untimed: timed, its upload favoured the side with fewer nodes.
        warms = set()

        def graphed(f, n):
            replay = clock.graph(lambda: many(f, n))
            warms.add(getattr(clock, "warm", None))
            return replay
        record("graph", _paired(ours, theirs, rounds, timed(graphed, graph=True, stamp=True), length))
        row["graph_warm"] = sorted(w for w in warms if w)
    except Exception as err:  # noqa: BLE001  recorded: the mode is missing, not the shape
        if str(err).startswith("stamp:"):
            raise   # the bench's own bookkeeping, not the shape: loud in every mode (review 61)
        row["graph"], row["graph_error"] = None, f"{type(err).__name__}: {err}".splitlines()[0]

    new_weights()
    record("flushed", _paired(ours, theirs, flushed_rounds or 3 * rounds,
                              timed(lambda f, n: f, measure=lambda f: lone(clock, f))))
    return row


def _weight_scale() -> float:
    """A secret, continuous weight scale in 2^[-8, -4) (a model's std ~0.02 and below)."""
    return 2.0 ** (-8 + 4 * secrets.randbelow(1 << 24) / (1 << 24))


def _operands(M: int, N: int, K: int, gauss):
    """The bench's first operands, from `gauss(shape, seed, scale)`: A at unit scale (the stamp's,
    as after a norm), W at a secret weight scale, each from a secret seed; and W's (seed, scale),
    from which the feed regenerates and rewrites it. Why (review 78): with seeds from the shape,
    two elements told the bench's first calls apart, and with unit-scale W a kernel could switch a
    several-call cheat on only where B was as small as a model's weights, on no bench call."""
    sa, sb = secrets.randbits(63), secrets.randbits(63)
    w = (sb, _weight_scale())
    return gauss((M, K), sa, 1.0), gauss((N, K), *w), w


def _torch_gauss(torch, shape, seed, scale: float = 1.0):
    """N(0, 1) fp16 from `seed`, times `scale`: the stamp's generator (`gauss_fill`), which is the
    judge's mode 0's too (guards' `gauss2`), so W here and B in every judge call have one
    distribution. With torch.randn (curand's Box-Muller, its smallest radii on a 2^-24 grid:
    review 69) a kernel could tell the bench's W from the judge's B on a read of ~1M elements."""
    x = torch.empty(*shape, device="cuda", dtype=torch.float16)
    gauss_fill(x.data_ptr(), x.numel(), seed, torch.cuda.current_stream().cuda_stream)
    return x if scale == 1.0 else (x.float() * scale).half()   # (rounded once, from fp32)


def _cupy_gauss(cp, shape, seed, scale: float = 1.0):
    x = cp.empty(shape, dtype=cp.float16)
    gauss_fill(x.data.ptr, x.size, seed, cp.cuda.get_current_stream().ptr)
    return x if scale == 1.0 else (x.astype(cp.float32) * scale).astype(cp.float16)


def _torch_operands(torch, M: int, N: int, K: int):
    return _operands(M, N, K, lambda shape, seed, scale: _torch_gauss(torch, shape, seed, scale))


def _torch_inputs(torch, M: int, N: int, K: int):
    """A and W as the bench's first operands (`_operands`), for probes that do not rewrite W."""
    return _torch_operands(torch, M, N, K)[:2]


# Largest error an output may have against the vendor's, as a fraction of the largest output. Every
# served entry's first call in the H100 benches of 2026-12-07 (156 rows) stayed within ~6.5e-4 of
# its largest output (one fp16 ulp there); the bound was 2e-2 until review 54 showed a kernel that
# computes in int8 with a fixed scale only where the library keeps its workspace (~1.6e-2: about 70x
# cuBLAS's error) passing it. FP8 and int8 inputs, the formats with twice fp16's tensor rate, land
# near 1e-2 and above.
AGREE_REL = 4e-3
# An absolute floor for outputs near zero: fp16's smallest normal. It was 1e-2, harmless while W was
# unit scale (outputs ~sqrt(K)); at a weight's scale the outputs are ~2^-6 of that, and 1e-2 would
# have let through several percent of the largest output (review 78's scaled W)
AGREE_FLOOR = 2.0 ** -14


def _agreement(err: float, scale: float) -> dict:
    return {"max_abs_diff": err, "agree": err <= AGREE_REL * (scale or 1.0) + AGREE_FLOOR}


def _split_agreement(diff, want, skip) -> dict:
    """`_agreement` of an output's |error| `diff` against `want` (numpy, torch or cupy arrays), where
    the columns in `skip` (those that read cells of W the stamp set, `feed.Feed`) are judged apart,
    each set against its own largest output: the cells' large values would otherwise loosen the
    bound on every other column (review 62)."""
    if not skip or diff.ndim != 2:   # (a snapshot's few elements: judged whole)
        return _agreement(float(diff.max()), float(abs(want).max()))
    m = abs(want[0]) < 0   # all false, in want's own array type (NaN and inf compare false too)
    m[sorted(skip)] = True
    parts = [_agreement(float(diff[:, sel].max()), float(abs(want[:, sel]).max())) for sel in (m, ~m) if bool(sel.any())]
    return {"max_abs_diff": max(p["max_abs_diff"] for p in parts), "agree": all(p["agree"] for p in parts)}


def _torch_agreement(got, want, skip=()) -> dict:
    want = want.float()
    return _split_agreement((got.float() - want).abs(), want, skip)


# Elements of one output a round copies right behind its call (`feed.Snapshot`): a kernel that put a
# call's work off to a later call of the round returned them unwritten (review 55)
SNAPSHOT_PLACES = 32


# The judge bounds a candidate's relative Frobenius error at `verify.error_ratio` (1.25) x cuBLAS's
# own against a float64 reference; the bench asks about the same of drawn rows, with room for the
# rows' sampling: a kernel that waited out the judge's carried calls and then streamed 12-bit copies
# of the weights (~3x cuBLAS's error; 13-bit ~1.6x, 14-bit ~1.1x on Gaussian inputs, CPU) stayed
# inside AGREE_REL's bound on the largest error and read ~1.33x at decode shapes (review 56)
PRECISE_RATIO = 1.35
PRECISE_ROWS = 64


def _torch_precise(torch, out, vendor, a, W, seed: int, skip=()) -> bool:
    """Up to PRECISE_ROWS rows of `out` (drawn from `seed`) within PRECISE_RATIO x F.linear's own
    (`vendor`, its output on `a`) relative Frobenius error against a float64 product of the same
    rows, as the judge's reference (W converted a slice at a time, so no float64 copy of a large W
    is held); over the columns not in `skip` (those that read the stamp's cells of W, whose large
    values would dominate both errors: review 62; `agree` judges them apart)."""
    M, N = out.shape
    gen = torch.Generator(device=out.device).manual_seed(seed)
    rows = torch.randperm(M, device=out.device, generator=gen)[:PRECISE_ROWS]
    a64 = a.index_select(0, rows).double()
    exact = torch.empty(len(rows), N, dtype=torch.float64, device=out.device)
    step = max(1, (64 << 20) // (8 * W.shape[1]))
    for n0 in range(0, N, step):
        exact[:, n0:n0 + step] = a64 @ W[n0:n0 + step].double().T
    out, vendor = out.index_select(0, rows), vendor.index_select(0, rows)
    if skip and len(skip) < N:   # (every column skipped: judged whole)
        keep = torch.ones(N, dtype=torch.bool, device=out.device)
        keep[sorted(skip)] = False
        exact, out, vendor = exact[:, keep], out[:, keep], vendor[:, keep]
    scale = max(float(exact.norm()), 1e-30)
    err, err_vendor = (float((x.double() - exact).norm()) for x in (out, vendor))
    return err <= PRECISE_RATIO * max(err_vendor, 2.0 ** -14 * scale)


def _stamp(ptrs: list[int], elems: int, stream, weights: int):
    """The pool's `library.stamp.Stamp`: at every M (review 59: where one call leaves SMs idle,
    split-K tiles or a padded last row of tiles, two calls in one pass cost less than two calls,
    so reading ahead paid above M = 512 too, where the first stamp stopped), setting drawn cells of
    W (at `weights`) beside each A (review 60: a copy of W made in a burst of calls, 14 bits a
    weight, passed every check)."""
    from cudal2.library import stamp
    return stamp.Stamp(ptrs, elems, stream, weights)


def _cells(W_ptr: int, rows: int, row: int, stream):
    """W's `feed.Cells` (`library.stamp.WeightCells`: the places only ever in launch parameters)."""
    from cudal2.library import stamp
    return stamp.WeightCells(W_ptr, rows, row, stream)


_ASIDE: dict[tuple, Any] = {}   # the feeds' own pools, one a framework and device for the process


def _torch_aside(torch):
    """`Feed`'s `aside` for torch: its allocations from a MemPool of their own (one for the
    process, so its cached blocks serve every shape's checks in turn, as the one pool did)."""
    if not hasattr(torch.cuda, "use_mem_pool"):
        raise RuntimeError(f"cudal2: the product bench needs torch.cuda.use_mem_pool, which torch "
                           f"{torch.__version__} lacks (2.7 has it)")
    key = ("torch", torch.cuda.current_device())
    if key not in _ASIDE:
        _ASIDE[key] = torch.cuda.MemPool()
    return lambda: torch.cuda.use_mem_pool(_ASIDE[key])


def _cupy_aside(cp, torch=None):
    """The same for cupy (a MemoryPool of its own), and torch's where the checks use it too."""
    key = ("cupy", cp.cuda.Device().id)
    if key not in _ASIDE:
        _ASIDE[key] = cp.cuda.MemoryPool()
    also = _torch_aside(torch) if torch is not None else contextlib.nullcontext

    @contextlib.contextmanager
    def aside():
        with cp.cuda.using_allocator(_ASIDE[key].malloc), also():
            yield
    return aside


def torch_feed(torch, A, W, calls: int, weights: tuple[int, float] | None = None) -> Feed:
    """A pool of A-shaped tensors (A the first) for a round of `calls` calls against W, refilled
    with fresh Gaussian values before every timed region; checked against F.linear, after checking
    every pool tensor against its fill and W against its (seed, scale) `weights` (`_operands`)
    regenerated, bit for bit."""
    l2 = torch.cuda.get_device_properties(A.device).L2_cache_size
    pool = [A] + [torch.empty_like(A) for _ in range(pool_size(calls, A.numel() * A.element_size(), l2) - 1)]

    # the current stream's handle, asked at every stamp (a graph's capture stream during a capture):
    # torch's raw getter where it has one, since building a Stream object took 4.6 us of the host
    # time both sides pay a stamped eager call (eval/stamp_probe.py --host, H100)
    raw, dev = getattr(torch._C, "_cuda_getCurrentRawStream", None), A.device.index

    def stream():
        return raw(dev) if raw is not None else torch.cuda.current_stream().cuda_stream

    def fill(a, seed):   # the stamp's generator (review 69: torch's normal_ told an unstamped A apart)
        gauss_fill(a.data_ptr(), a.numel(), seed, stream())

    def same(x, y):   # bit for bit (torch.equal takes -0 for 0)
        return torch.equal(x.view(torch.int16), y.view(torch.int16))

    def matches(a, seed):
        want = torch.empty_like(a)
        fill(want, seed)
        return same(a, want)

    seeds = [weights]

    def weights_intact():
        return seeds[0] is None or same(W, _torch_gauss(torch, tuple(W.shape), *seeds[0]))

    def new_weights(seed):   # W rewritten in place, as an optimizer step or a weight sync does
        if seeds[0] is not None:
            seeds[0] = (seed, seeds[0][1])
            W.copy_(_torch_gauss(torch, tuple(W.shape), *seeds[0]))

    class Snap(Snapshot):
        def places(self, seed):
            gen = torch.Generator(device=A.device).manual_seed(seed)
            return torch.randint(0, A.shape[0] * W.shape[0], (SNAPSHOT_PLACES,), device=A.device, generator=gen)

        def buffer(self):
            return torch.empty(SNAPSHOT_PLACES, dtype=A.dtype, device=A.device)

        def take(self, out, places, into):
            torch.index_select(out.reshape(-1), 0, places, out=into)

        def pick(self, ref, places):
            return ref.reshape(-1).index_select(0, places)

    def precise(out, ref, a, seed, skip=()):
        return _torch_precise(torch, out, ref, a, W, seed, skip)

    feed = Feed(pool, fill, lambda a: torch.nn.functional.linear(a, W), _torch_agreement,
                out_bytes=A.shape[0] * W.shape[0] * A.element_size(), matches=matches,
                weights_intact=weights_intact, snapshot=Snap(), precise=precise, new_weights=new_weights,
                stamp=_stamp([a.data_ptr() for a in pool], A.numel(), stream, W.data_ptr()),
                cells=_cells(W.data_ptr(), *W.shape, stream), aside=_torch_aside(torch),
                rerun=Rerun(lambda a: a.clone(), lambda x, key: mask(x.data_ptr(), x.numel(), key, stream()), same))
    feed.fresh()
    return feed


def cupy_feed(cp, A, B, calls: int, weights: tuple[int, float] | None = None) -> Feed:
    """The same for cupy arrays, checked against cupy.matmul (B regenerated from its (seed, scale)
    `weights` by `_cupy_gauss`)."""
    l2 = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["l2CacheSize"]
    pool = [A] + [cp.empty_like(A) for _ in range(pool_size(calls, A.nbytes, l2) - 1)]

    def stream():
        return cp.cuda.get_current_stream().ptr

    def fill(a, seed):   # the stamp's generator, as torch_feed's
        gauss_fill(a.data.ptr, a.size, seed, stream())

    def same(x, y):   # bit for bit
        return bool((x.view(cp.uint16) == y.view(cp.uint16)).all())

    def matches(a, seed):
        want = cp.empty_like(a)
        fill(want, seed)
        return same(a, want)

    seeds = [weights]

    def weights_intact():
        return seeds[0] is None or same(B, _cupy_gauss(cp, B.shape, *seeds[0]))

    def new_weights(seed):
        if seeds[0] is not None:
            seeds[0] = (seed, seeds[0][1])
            B[...] = _cupy_gauss(cp, B.shape, *seeds[0])

    def agreement(got, want, skip=()) -> dict:
        g32, w32 = got.astype(cp.float32), want.astype(cp.float32)
        return _split_agreement(cp.abs(g32 - w32), w32, skip)
    class Snap(Snapshot):
        def places(self, seed):
            at = cp.random.default_rng(seed).integers(0, A.shape[0] * B.shape[0], SNAPSHOT_PLACES)
            cp.cuda.get_current_stream().synchronize()   # CupyClock's capture stream does not wait on this one
            return at

        def buffer(self):
            return cp.empty(SNAPSHOT_PLACES, dtype=A.dtype)

        def take(self, out, places, into):
            cp.take(out.ravel(), places, out=into)

        def pick(self, ref, places):
            return ref.ravel().take(places)

    def precise(out, ref, a, seed, skip=()):   # the torch rows' check, on the same memory (DLPack, no copy)
        import torch
        cp.cuda.get_current_stream().synchronize()   # torch's stream is another one
        ok = _torch_precise(torch, *(torch.from_dlpack(x) for x in (out, ref, a, B)), seed, skip)
        torch.cuda.current_stream().synchronize()
        return ok
    try:
        import torch
    except ImportError:   # a cupy-only environment: the bound on the largest error only
        precise, torch = None, None
    feed = Feed(pool, fill, lambda a: cp.matmul(a, B.T), agreement, out_bytes=A.shape[0] * B.shape[0] * A.itemsize,
                matches=matches, weights_intact=weights_intact, snapshot=Snap(), new_weights=new_weights,
                precise=precise, stamp=_stamp([a.data.ptr for a in pool], A.size, stream, B.data.ptr),
                cells=_cells(B.data.ptr, *B.shape, stream), aside=_cupy_aside(cp, torch),
                rerun=Rerun(lambda a: a.copy(), lambda x, key: mask(x.data.ptr, x.size, key, stream()), same))
    feed.fresh()
    return feed


# An eager or graph round of long calls stops growing past this (calls_for). Rounds of ~80 ms (50
# calls of 1.6 ms) read F.linear against itself at 0.994-1.023 in graph mode and 0.994-1.006 eager
# over 9 repeats at 4096x8192x16384; rounds of 8 calls, 45 of them, at 0.988-1.003 (11 of 12 repeats
# within 0.9994-1.0027) and 0.9997-1.0001, interleaved on one H100 (eval/aa_probe.py, 2026-12-06):
# the power-bound clock drifts within a long round, so a pair's two sides see different clocks.
ROUND_MS = 15.0


def calls_for(call_ms: float, calls: int) -> int:
    """Calls per eager/graph round: `calls`, or fewer where they would take more than ROUND_MS,
    never fewer than 3. Host costs, what back-to-back calls amortize, are microseconds, so a round
    of a few long calls measures them as well; shapes under 0.3 ms a call keep every call."""
    return max(3, min(calls, math.ceil(ROUND_MS / max(call_ms, 1e-6))))


def rounds_for(rounds: int, calls: int, used: int) -> int:
    """Paired eager/graph rounds where a round holds `used` of the `calls` asked: about as many calls
    a side as `rounds` full rounds, in more, shorter rounds, at most 3x `rounds`."""
    return min(3 * rounds, math.ceil(rounds * calls / used))


def pace(clock, theirs, rounds: int, calls: int, most: int | None = None) -> dict:
    """This shape's calls a round (`calls_for` the vendor's call time, at most `most`) and eager/graph
    rounds (`rounds_for`: fewer calls a round, more rounds), as a row records them and as `modes`'
    keyword arguments (the flushed mode keeps 3x the `rounds` asked)."""
    used = min(calls_for(clock.time(theirs), calls), most or calls)
    return {"calls": used, "rounds": rounds_for(rounds, calls, used), "flushed_rounds": 3 * rounds}


def paced_modes(clock, ours, theirs, rounds: int, calls: int, use=None, feed=None) -> dict:
    """`pace` at the vendor's (`theirs`) call time, then `modes` with those rounds: the row's
    `calls`, `rounds`, `flushed_rounds` and its three modes. `use(theirs)` runs first when given,
    so the pacing call is made as the timed ones are. With a `feed`, a round has at most its
    `round_cap` calls (the pool's tensors, the kept outputs' bytes), in more rounds as `pace` gives
    shorter rounds (the first H100 run kept 15 rounds of 3 calls at big shapes, and a vendor-served
    12288x12288x4096 read 0.963 in graph mode), and the row counts the timed rounds of `ours`
    checked and failed."""
    if use:
        use(theirs)
    paced = pace(clock, theirs, rounds, calls, feed.round_cap if feed else None)
    row = {**paced, **modes(clock, ours, theirs, use=use, feed=feed, **paced)}
    if feed:
        row["timed_checks"] = {"rounds": feed.checks, "failed": feed.failures, "vendor_failed": feed.other_failures,
                               "why": feed.why[True], "vendor_why": feed.why[False]}
        row["stamped"] = feed.stamp is not None   # eager and graph times include a write of each A
        if feed.stamp is not None:
            try:
                row["stamp_us"] = stamp_cost(clock, feed, paced["calls"])
            except Exception as err:  # noqa: BLE001  recorded: the figure is missing, not the row
                row["stamp_us"], row["stamp_error"] = None, f"{type(err).__name__}: {err}".splitlines()[0]
    return row


def stamp_cost(clock, feed, calls: int, rounds: int = 3) -> float:
    """µs of one stamp (`feed.Feed.begin`'s write of A before a call) alone: a graph of `calls`
    of them, uploaded and replayed as the graph mode's rounds are, median of `rounds` replays.
    Both sides' eager and graph times include one a call; the ratio without them would be
    (t_theirs - s) / (t_ours - s)."""
    feed.begin(calls, stamp=True)
    replay = clock.graph(lambda: [feed.restamp(j % len(feed.pool)) for j in range(calls)])
    feed.commit()
    ms = statistics.median(clock.time(replay) for _ in range(rounds))
    feed.begin()   # the feed as a turn leaves it: not stamping
    return 1e3 * ms / calls


def flush_buffer(torch):
    """A buffer twice the L2 of the current GPU: flushing it (`timing.flush_l2`, the flushed mode's
    `idle_cold`) leaves none of the next call's data in the L2."""
    return torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")


def ran(before: dict[str, int], after: dict[str, int], eid: str | None) -> dict:
    """Which entries' kernels ran between two `lib.stats()["hits"]` readings, and whether the call
    counts as our kernel's: the entry a row is for (`eid`) must be among them, so a row can never
    credit one entry with another's time (a replacement's, say, where dispatch picked it); a row
    for no entry (a listed shape) counts any kernel of ours."""
    ids = sorted(k for k, v in after.items() if v > before.get(k, 0))
    return {"kernel_ran": eid in ids if eid else bool(ids), "ran": ids}


def measure_shape(torch, lib, M: int, N: int, K: int, rounds: int, calls: int, flush,
                  eid: str | None = None) -> dict:
    """`cudal2.linear` against F.linear at one shape, torch tensors; for entry `eid` if given."""
    import cudal2
    F = torch.nn.functional
    A, W, weights = _torch_operands(torch, M, N, K)
    feed = torch_feed(torch, A, W, calls, weights)
    ours = feed.caller(lambda a: cudal2.linear(a, W), checked=True)  # the public API
    theirs = feed.caller(lambda a: F.linear(a, W))
    before = dict(lib.stats()["hits"])
    ours()
    row = {"M": M, "N": N, "K": K, "band": band(M, N, K), **ran(before, lib.stats()["hits"], eid),
           **feed.agreement()}
    for _ in range(3):   # warm-up, both, checked as the timed calls are
        ours(), theirs()
    feed.check(untimed=True)
    feed.begin()
    clock = TorchClock(torch, flush)
    row.update(paced_modes(clock, ours, theirs, rounds, calls, feed=feed))
    row["agree"] = row["agree"] and feed.failures == 0
    if M <= DECODE_M:
        row["copy"] = copy_rate(torch, clock, W, rounds, row["calls"], row)
    return row


DECODE_M = 16   # up to here a GEMM streams B (the weights) and its bar is HBM, not cuBLAS (issue 12)


def copy_rate(torch, clock, W, rounds: int, calls: int, row: dict) -> dict:
    """What a device-to-device copy of W's bytes takes, timed as the calls were (graph: `calls`
    copies, captured afresh each round, replayed back to back; flushed: one copy after an L2 flush
    and an idle GPU; medians over the rounds), and how fast each caller read W against it:
    `pct_of_copy[mode][side]` is W's bytes per second read by that side over the copy's bytes
    moved (read + write) per second, in %. A copy reads and writes, so a GEMV that only reads W
    could pass 100; the copy is the bandwidth this GPU gives a stream of reads and writes in the
    same mode."""
    dst = torch.empty_like(W)
    one = lambda: dst.copy_(W)  # noqa: E731
    one()
    copies = lambda: many(one, calls)  # noqa: E731
    graph_ms = statistics.median(clock.time(clock.graph(copies)) for _ in range(rounds))
    us = {"graph": 1e3 * graph_ms / calls,
          "flushed": 1e3 * statistics.median(lone(clock, one) for _ in range(3 * rounds))}
    nbytes = W.numel() * W.element_size()
    out = {"bytes": nbytes, "us": us, "rw_gbps": {m: 2 * nbytes / t / 1e3 for m, t in us.items()}, "pct_of_copy": {}}
    for m, t_copy in us.items():
        if row.get(f"{m}_us"):
            out["pct_of_copy"][m] = {side: 100 * (nbytes / t) / (2 * nbytes / t_copy)
                                     for side, t in row[f"{m}_us"].items()}
    return out


def measure_shape_cupy(cp, lib, M: int, N: int, K: int, rounds: int, calls: int, flush,
                       eid: str | None = None) -> dict:
    """`cudal2.matmul` on cupy arrays against `cupy.matmul(A, B.T)` at one shape; for entry `eid`
    if given."""
    import cudal2

    A, B, weights = _operands(M, N, K, lambda shape, seed, scale: _cupy_gauss(cp, shape, seed, scale))
    feed = cupy_feed(cp, A, B, calls, weights)
    ours = feed.caller(lambda a: cudal2.matmul(a, B), checked=True)   # the public API, cupy in and out
    theirs = feed.caller(lambda a: cp.matmul(a, B.T))
    before = dict(lib.stats()["hits"])
    ours()
    row = {"api": "cupy", "M": M, "N": N, "K": K, "band": band(M, N, K), **ran(before, lib.stats()["hits"], eid),
           **feed.agreement()}
    for _ in range(3):
        ours(), theirs()
    feed.check(untimed=True)
    feed.begin()
    row.update(paced_modes(CupyClock(cp, flush), ours, theirs, rounds, calls, feed=feed))
    row["agree"] = row["agree"] and feed.failures == 0
    return row


def compare_libraries(torch, a, b, M: int, N: int, K: int, rounds: int, calls: int, flush) -> dict:
    """Library `b` against library `a` at one shape through `Library.linear` (the compiled
    dispatcher): ratios t(a) / t(b), each library made the dispatcher's before each use (outside
    the timing; a warm call registers its entry first). For a reordered cubin (b) against the
    shipped one (a), both libraries serving every entry. `hits`: calls of each library that ran
    its kernel, counted while it was the dispatcher's (making a library the dispatcher's resets
    the counts, so they are read right after its own call)."""
    A, W = _torch_inputs(torch, M, N, K)
    fa = lambda: a.linear(A, W)  # noqa: E731
    fb = lambda: b.linear(A, W)  # noqa: E731
    owner = {id(fa): a, id(fb): b}
    active = [None]

    def use(f):
        if active[0] is not owner[id(f)]:
            active[0] = owner[id(f)]
            active[0].compiled()
            f()
            torch.cuda.synchronize()

    outs, hits = [], {}
    for lib, f in ((a, fa), (b, fb)):
        use(f)
        before = sum(lib.stats()["hits"].values())
        outs.append(f())
        hits[lib.folder.name] = sum(lib.stats()["hits"].values()) - before
    torch.cuda.synchronize()
    row = {"M": M, "N": N, "K": K, "band": band(M, N, K), "hits": hits,
           "bit_identical": bool(torch.equal(outs[0], outs[1]))}
    return {**row, **paced_modes(TorchClock(torch, flush), fb, fa, rounds, calls, use)}


def remaining(todo: list[tuple], out: Path, cupy: bool) -> tuple[list[dict], list[tuple]]:
    """(the measured rows already in `out`, the items of `todo` (id or None, M, N, K) without a row
    for every API asked for). The summary of the earlier run is dropped: the new run writes its own."""
    lines = [json.loads(x) for x in out.read_text().splitlines() if x.strip()] if out.exists() else []
    kept = [r for r in lines if "band" in r]
    done = {(r.get("id"), r["M"], r["N"], r["K"], r.get("api", "torch")) for r in kept}
    apis = ("torch", "cupy") if cupy else ("torch",)
    return kept, [t for t in todo if not all((*t, api) in done for api in apis)]


def unmeasured(entries: list) -> list:
    """The entries no product bench has measured yet (what a search just published): the others
    keep their records, so `--update` over these alone leaves every other entry's history as it is."""
    from cudal2.library.manifest import product_measured
    return [e for e in entries if not product_measured(e)]


def to_measure(entries: list, new: bool) -> list:
    """The entries whose shapes a run measures: all, or the `unmeasured` ones, less those on standby
    for a replacement (`manifest.STANDBY`): at their shape dispatch runs the replacement whenever
    it is served, so a row for the standby would only find the replacement's kernel running (`ran`)."""
    from cudal2.library.manifest import STANDBY
    return [e for e in (unmeasured(entries) if new else entries) if STANDBY not in e.extra]


def run(folder: Path, out: Path, rounds: int = 15, calls: int = 50, limit: int = 0,
        serve_all: bool = True, shapes: list[tuple[int, int, int]] = (), cupy: bool = False,
        resume: bool = False, new: bool = False) -> list[dict]:
    """Measure every entry's shape of `folder` (only the `unmeasured` ones with `new`; the first
    `limit`, if given), then each of `shapes` no entry has; JSON lines to `out` (an entry's row
    carries its `id`). With `cupy`, each shape also gets a row (`"api": "cupy"`) for
    `cudal2.matmul` on cupy arrays against `cupy.matmul`. With `resume`, the rows already in `out`
    are kept and their shapes not measured again."""
    t_start = time.perf_counter()
    import torch

    import cudal2
    from cudal2.library import Library, LibraryError
    torch.cuda.init()
    torch.empty(1, device="cuda")   # the context exists before the first library call is timed
    e0 = Library(Path(folder)).entries[0]
    x = torch.randn(e0.M or e0.m_range[1], e0.K, device="cuda", dtype=torch.float16)
    w = torch.randn(e0.N, e0.K, device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    # The first call, as a new process makes it: the library read, the dispatcher loaded, then the
    # call itself (which loads and registers the one binary it needs), each part timed.
    t0 = time.perf_counter()
    lib = Library(Path(folder), serve_margin=None) if serve_all else Library(Path(folder))
    cudal2.library._default = lib
    t1 = time.perf_counter()
    lib.compiled()
    t2 = time.perf_counter()
    cudal2.linear(x, w)
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    first = {"total": (t3 - t0) * 1e3, "read_library": (t1 - t0) * 1e3, "load_dispatcher": (t2 - t1) * 1e3,
             "call_with_its_binary": (t3 - t2) * 1e3}
    first_ms = first["total"]
    entries = to_measure(lib.entries, new)
    entries = entries[:limit] if limit else entries
    have = {(e.M, e.N, e.K) for e in lib.entries}
    todo = [(e.id, e.M or e.m_range[1], e.N, e.K) for e in entries]
    todo += [(None, *s) for s in dict.fromkeys(tuple(s) for s in shapes) if s not in have]
    if lib.compiled() is None:
        raise LibraryError("cudal2: the compiled dispatcher is not built; run `cudal2 library build` first")
    flush = flush_buffer(torch)
    if cupy:
        import cupy as cp
        cflush = cp.empty(flush.numel(), dtype=cp.uint8)
    rows, todo = remaining(todo, out, cupy) if resume else ([], todo)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from rich.progress import track
    for eid, M, N, K in track(todo, description="product bench"):
        tag = {"id": eid} if eid else {}
        got = [{**tag, **measure_shape(torch, lib, M, N, K, rounds, calls, flush, eid)}]
        if cupy:
            got.append({**tag, **measure_shape_cupy(cp, lib, M, N, K, rounds, calls, cflush, eid)})
        rows += got
        with out.open("a") as f:
            f.writelines(json.dumps(row) + "\n" for row in got)
    summary = {"summary": True, "serve_all": serve_all, "served": len(lib.served), "first_call_ms": first_ms,
               "first_call_parts_ms": first, "process_s": time.perf_counter() - t_start,
               "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "stats": lib.stats(),
               "disabled": lib.disabled()}
    with out.open("a") as f:
        f.write(json.dumps(summary) + "\n")
    return rows


SHAPES_GROUP = "of the --shapes list"


def geomeans(rows: list[dict], api: str = "torch", shapes=()) -> dict[str, dict[str, float]]:
    """Geomean of the ratios per band and overall, per mode, with the number of shapes, over the
    rows of one API (torch rows carry no `api`); a mode no row measured (None) is left out. With
    `shapes` ((M, N, K) triples: the list a user asked about), also over those shapes alone, each
    once (the bands mix them with every entry's shape)."""
    def geo(sel: list[dict]) -> dict[str, float]:
        g = {m: math.exp(sum(math.log(r[m]) for r in sel) / len(sel))
             for m in ("eager", "graph", "flushed") if all(r.get(m) is not None for r in sel)}
        return {**g, "shapes": len(sel)}

    out: dict[str, dict[str, float]] = {}
    mine = [r for r in rows if r.get("api", "torch") == api]
    for name in [b[2] for b in BANDS] + ["all"]:
        sel = [r for r in mine if name == "all" or r["band"] == name]
        if sel:
            out[name] = geo(sel)
    want = {tuple(x) for x in shapes}
    listed: dict[tuple, dict] = {}
    for r in mine if want else []:
        if (r["M"], r["N"], r["K"]) in want:
            listed.setdefault((r["M"], r["N"], r["K"]), r)
    if listed:
        out[SHAPES_GROUP] = geo(list(listed.values()))
    return out


MODES = ("eager", "graph", "flushed")


def record(folder: Path, rows: list[dict]) -> int:
    """Record each measured entry's product-path speedups into the manifest (`manifest.record_bench`);
    an entry whose kernel did not run, disagreed, or lacks a mode (a graph that could not be
    captured records None, which the manifest's reader refuses) gets none: not served."""
    from cudal2.library import manifest

    def speedup(r: dict) -> dict:
        whole = r["kernel_ran"] and r["agree"] and all(r.get(m) is not None for m in MODES)
        return {m: r[m] for m in MODES} if whole else {}
    return manifest.record_bench(folder, {r["id"]: {"kind": "product", "speedup": speedup(r)}
                                          for r in rows if "id" in r and r.get("api", "torch") == "torch"})


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="the product-path bench, in this (fresh) process")
    ap.add_argument("folder", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--served", action="store_true", help="serve what the manifest serves (default: every entry)")
    ap.add_argument("--shapes", type=Path, help="a shapes file (cudal2 generate --shapes): measure these too")
    ap.add_argument("--cupy", action="store_true", help="also cudal2.matmul on cupy arrays against cupy.matmul")
    ap.add_argument("--resume", action="store_true", help="keep the rows already in OUT; measure only the rest")
    ap.add_argument("--new", action="store_true", help="only the entries no product bench has measured yet")
    a = ap.parse_args()
    from cudal2.problem import load_shapes
    extra = [(p.M, p.N, p.K) for p in load_shapes(a.shapes)] if a.shapes else []
    run(a.folder, a.out, a.rounds, a.calls, a.limit, serve_all=not a.served, shapes=extra, cupy=a.cupy,
        resume=a.resume, new=a.new)
