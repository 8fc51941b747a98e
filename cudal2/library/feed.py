"""Fresh operands for every timed call of the product bench, and a check of what those calls returned.

Why: the bench decides what the library serves, and the library hands a kernel what the judge's
ordinary calls never do: C and the workspace come from the caching allocator as the previous call
left them, and no scrub runs between calls. A kernel can keep state there, tell the bench from the
judge by it, and behave otherwise on the bench (reviews 53-57: a memo, int8, skipped, deferred or
zeroed work, packed weights). The judge's carried calls now call a kernel as a model does
(harness/judge.py); this module makes the bench's own numbers worth nothing to such a kernel.

Guarantees:
- `Feed.caller(fn)` makes a caller that runs `fn(a)` on the pool's A tensors in turn; `fresh()`
  rewrites every tensor of the pool in place with new Gaussian values (seeds from the OS's
  entropy: counted seeds let a kernel know the next fill) and starts again at the first. The
  bench calls it right before each timed region (after a graph's capture and upload), so with a
  pool at least as large as a round's calls no timed call's A was seen by an earlier call.
  `new_weights()` rewrites B in place from a new seed (the bench does it before each mode), as an
  optimizer step or weight sync does: a copy of B kept keyed on its pointer goes stale.
- every caller keeps every output of a turn (from `begin` on), each in its own C block (one kept
  output at a random place would move the next C, telling a lazy kernel the call before was the
  checked one). `check()`, after the timed region, finds every pool tensor and B as they were made,
  bit for bit (regenerated from their seeds: the reference reads them, so a call that zeroed A or
  B and wrote zeros would agree with it), then compares the round's last output and up to
  CHECKS_PER_ROUND - 1 more, drawn after the round, with the reference on their A (`agreement`'s
  bound on the largest error, and `precise`: drawn rows within the judge's bound of the vendor's
  own error). Every caller's turn is checked alike, so both sides do the same untimed work
  between timed regions (with only ours checked, F.linear against itself read 0.959 in graph mode
  at 12288x12288x4096 on the H100); only a `checked` caller's failures count (`failures`,
  `checks`), the other's go to `other_failures`. `check(untimed=True)` checks the calls nobody
  times alike (a graph's warm-up pass, the bench's warm-up calls), so skipping them to start the
  timed region on a cooler GPU fails. Where the feed has a `Rerun`, one drawn checked output of
  each side's turn is made again, from a copy of its A and W as its call read them, and must equal
  it bit for bit: the judge's determinism, which a kernel could keep in the judge alone (review
  71; `Feed._made_again`).
- right behind one call of each pass (drawn for each pass apart, never the last), a few drawn
  elements of its output are copied on its stream into a buffer made before the pass
  (`Snapshot`; a node of the graph in graph mode): an output must be there when its call returns,
  not by the round's end. No graph runs before its timed replay (product_bench.TorchClock.graph
  uploads it): a replay of it showed a kernel the calls, their number and where the copy sits.
- `length(calls)` draws each round's calls (half of `calls` to `calls`, the same for both sides):
  with a fixed length a kernel that counts calls knew a round's last call.
- `pool_size` keeps the pool within a quarter of the L2 and never under 3; `round_cap` keeps a
  round's kept outputs within KEPT_BYTES; the bench makes a round no longer than either.

What it changes in the numbers: rounds of fewer calls where A is over ~256 KB (a graph's launch
shared by fewer calls, on both sides alike); where three A's outgrow the L2 the later calls of a
round read A from HBM; each call writes a C block no other call of its round wrote (a write-heavy
shape no longer keeps one C in L2); rounds of drawn lengths, about 3/4 of the calls asked; one
small copy a round, timed, on both sides; W rewritten before each mode; where the bench stamps,
one small write of A before each eager or graph call, timed, on both sides.

- in a stamped turn (`begin(calls, stamp=True)`: the bench's eager and graph rounds, where the
  feed has a `Stamper`), each call first writes its own A, on its stream, with values that exist
  nowhere before that write runs (a graph captures the write as a node): no call's output can be
  computed ahead of it. Without it every pool A held its final contents before a round's first
  call, and a kernel read ahead through the pool at memory-bound shapes, one pass over B for
  many calls, each output handed back right when its call came (review 58,
  bad/zz58_pool_read_ahead). `intact` finds a stamped A from its stamp's logged keys; a write
  captured into a graph counts from `commit()` (right before the timed replay), one enqueued at
  once (`restamp`). Where the feed has W's `Cells`, its last call's stamp and each other
  one's by chance (CELL_WRITES a pass on average: reviews 65 and 66) also set WPOS cells of W,
  drawn for the turn (distinct): a copy of W kept through a burst of back-to-back calls answers
  wrong in a whole column (review 60, bad/zz60_burst_repacked_weights_14bit: a 14-bit copy
  passed every check). An unstamped turn
  (the lone flushed calls) has WPOS cells set from the host at its start, untimed: a copy of W
  kept across those turns is as wrong (review 64, bad/zz64_flushed_weight_memo_14bit). Each
  output is checked against W as its call read it (the cells later writes set hold their
  earlier values meanwhile), `intact` finds W as made but for the turn's cells, and the next
  turn (`begin`) puts those back.

- the feed's own work between timed regions (fills, references, checks, W's rewrites and cells:
  `begin`, `fresh`, `check`, `intact`, `agreement`, `new_weights`) allocates from an `aside`
  pool where one is given (product_bench: a torch MemPool, a cupy MemoryPool), so between two
  calls the allocator hands the library's C and workspace back as a loop of calls would. Sharing
  one pool, the checks' large blocks took a kept workspace over: on the H100 a 14-bit copy of W
  (bad/zz64) never reached a flushed turn of the bench, and ran on in a user's loop, where nothing
  would find it stale after a sparse change of W.

Does not: time anything, or stop a kernel from keeping state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import random
from typing import Any, Callable

from cudal2.library.stamp import WPOS, weight_half

CHECKS_PER_ROUND = 4       # outputs of a round compared with the reference: its last, and drawn ones
KEPT_BYTES = 2 << 30       # outputs a round keeps alive, at most


def pool_size(calls: int, a_bytes: int, l2_bytes: int) -> int:
    """A tensors in the pool: one for each call of a round, as many as a quarter of the L2 holds
    (so A stays where a model's layer finds it, just written by the op before), at least 3. A pool
    of 1 GiB on the H100 put A out of L2 for most calls of a round at A-heavy shapes: 16384x64x1024
    (32 MB of A a call) read 0.957 in graph mode where one L2-resident A read 1.048."""
    return max(3, min(calls, l2_bytes // 4 // max(a_bytes, 1)))


class Snapshot:
    """How the bench copies a few elements of one output right behind its call: `places(seed)`
    draws where (on the device, from a seed the feed draws), `buffer()` makes what the copy goes
    into (before any capture: an allocation between two calls of a graph would move every later
    C, a mark a kernel could read: review 56), `take(out, places, into)` enqueues the copy on the
    call's stream, `pick(ref, places)` the same places of a reference."""

    def places(self, seed: int) -> Any: ...
    def buffer(self) -> Any: ...
    def take(self, out: Any, places: Any, into: Any) -> None: ...
    def pick(self, ref: Any, places: Any) -> Any: ...


@dataclasses.dataclass(frozen=True)
class Rerun:
    """How the feed makes a checked output again (the judge's determinism): `copy(a)` a copy of an A
    at a new address, `mask(x, key)` the XOR of an output with a keystream of `key` (the same call
    again undoes it; the key is nowhere a kernel can read it), `same(x, y)` whether two outputs are
    equal bit for bit. All untimed, on the current stream, in the feed's aside pool."""

    copy: Callable[[Any], Any]
    mask: Callable[[Any, int], None]
    same: Callable[[Any, Any], bool]


# A call made again may take RERUN_CALLS of its side's timed calls and RERUN_SLACK_MS more (one eager
# call timed alone, its host's dispatch included), and one of them at most RERUN_CAP_MS more (a stray
# pause of the host, a first allocation in the aside pool; Python's garbage collector is held off):
# a longer one did untimed work shortly before the other side's timed region (heat), which the pair
# would charge to that side (review 72). Two calls within the first bound are asked, in at most
# RERUN_TRIES, so one stall does not fail an honest row (a false failure leaves its entry unserved);
# a kernel slow on every try is not forgiven, and none may pass the cap (review 73). Between such a
# call and the other side's timed region lie that side's own untimed check and fill.
RERUN_CALLS = 2.0
RERUN_SLACK_MS = 2.0
RERUN_CAP_MS = 10.0
RERUN_TRIES = 4

PASSES = 2   # passes of a turn's calls: a graph's warm-up and its capture (eager: one)
# writes of a pass that also set WPOS cells of W, on average (`_writers`: its last call, and each
# other one apart by chance): a kernel that keeps a copy of W through a burst cannot tell which
# calls changed it, nor how many will, and a copy made before one of them fails the round's last
# check; more cells only loosened the checks (review 63: 200 live cells left N = 64 outputs almost
# no column without one)
CELL_WRITES = 2
STAMPED = -1   # a pool tensor's seed when its last write was a stamp (its keys are the stamper's)


class Stamper:
    """How the bench writes pool tensor j right before its call (library/stamp.Stamp): `write(j,
    at)` enqueues the write on the call's stream, with values that exist nowhere before it runs
    (in A, and in W's cells `at`), and says whether it was captured into a graph (it runs when the
    graph does); `commit()`: the writes captured into a graph since the last commit are about to
    run (its timed replay); `drop()`: they never will, and a new turn starts (the feed puts the
    cells of W that earlier writes set back, so no check asks for them); `matches(j)`, whether
    tensor j, and the cells of W its last write that ran set, hold what that write wrote, bit
    for bit."""

    def write(self, j: int, at: tuple[int, ...] = ()) -> bool: ...
    def commit(self) -> None: ...
    def drop(self) -> None: ...
    def matches(self, j: int) -> bool: ...


class Cells:
    """How the feed reads and sets a few cells of W, untimed, on the current stream: `count` cells
    in all (flat indices; `row` of them a row of W, an output column), `get(at)` their values as
    fp16 bit patterns (host ints), `put(at, vals)`; no device memory may hold the places before a
    turn's calls (review 62: an index tensor did, and a kernel could find it)."""

    count: int
    row: int

    def get(self, at: list[int]) -> list[int]: ...
    def put(self, at: list[int], vals: list[int]) -> None: ...


def _aside(method):
    """`method` runs in the feed's `aside` allocation pool; entered once, however the feed's
    methods nest (torch's pool context must not be entered twice on a thread)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        if self._in_aside:
            return method(self, *args, **kwargs)
        self._in_aside = True
        try:
            with self.aside():
                return method(self, *args, **kwargs)
        finally:
            self._in_aside = False
    return run


def _ungarbaged(time, work):
    """`time(work)` with Python's garbage collector held off (its pauses would count)."""
    was = gc.isenabled()
    gc.disable()
    try:
        return time(work)
    finally:
        if was:
            gc.enable()


class Feed:
    def __init__(self, pool: list, fill: Callable[[Any, int], None], reference: Callable[[Any], Any],
                 agreement: Callable[[Any, Any], dict], out_bytes: int = 0, seed: int | None = None,
                 matches: Callable[[Any, int], bool] | None = None,
                 weights_intact: Callable[[], bool] | None = None, snapshot: "Snapshot | None" = None,
                 precise: Callable[[Any, Any, Any, int], bool] | None = None,
                 new_weights: Callable[[int], None] | None = None, stamp: "Stamper | None" = None,
                 cells: "Cells | None" = None,
                 aside: Callable[[], contextlib.AbstractContextManager] | None = None,
                 rerun: Rerun | None = None):
        """`agreement(got, want)`: {"max_abs_diff", "agree"} of an output against the reference;
        `out_bytes`: one output's size (for `round_cap`); `seed`: of the draws (tests; by default
        the OS's entropy, so no kernel can know a fill, a round's length or the checked outputs);
        `matches(a, seed)`: whether pool tensor a holds what `fill(., seed)` wrote, bit for bit;
        `weights_intact()`: whether B still holds what it was made with (regenerated, not a copy a
        kernel could find); `snapshot`: how to copy a few drawn elements of an output right after
        its call (`Snapshot`), or None for no snapshots; `precise(out, ref, a, seed)`: whether an
        output's error against a more exact reference is within the judge's bound of the
        vendor's own (`ref`, the reference on `a`; rows drawn from `seed`), beside `agreement`'s
        bound on the largest error;
        `new_weights(seed)`: rewrite B in place from a new seed (and check it against that one);
        `stamp`: how to write a pool tensor right before its call (`Stamper`), or None for never;
        `cells`: W's cells (`Cells`), where a pass's writers (`_writers`) set WPOS drawn ones, or None;
        then `agreement` and `precise` take `skip`, the output columns that read set cells, to judge
        them apart; `aside()`: a context in which the feed's own allocations come from a pool of
        their own, not the one the timed calls allocate from (None: no such pool); `rerun`: how to
        make a checked output again (`Rerun`; None: the judge's determinism is not asked)."""
        self.pool, self.fill, self.reference, self.compare = pool, fill, reference, agreement
        self.matches, self.weights_intact, self.precise, self.rewrite_weights = matches, weights_intact, precise, new_weights
        self.round_cap = max(3, min(len(pool), KEPT_BYTES // max(out_bytes, 1)))
        # the fills' seeds, W's, the snapshots' and the checks' draws, and the cells of W each turn
        # sets: from the OS's entropy where no seed is given (a Mersenne Twister's draws can be
        # predicted from enough of its output: review 62 for the cells; review 70 for the rest,
        # whose fill seeds a kernel could read back from the fill's registers)
        self.draw = random.Random(seed) if seed is not None else random.SystemRandom()
        self.cell_draw = random.Random(seed) if seed is not None else random.SystemRandom()
        self.seeds: list[int | None] = [None] * len(pool)
        self.i = 0
        self.calls = 1
        self.kept: list[tuple] = []
        self.snap, self.snaps, self.plan, self.made = snapshot, [], [], 0
        self.stamp, self.stamping = stamp, False
        self.cells = cells
        self.aside, self._in_aside = aside or contextlib.nullcontext, False
        self.rerun = rerun
        self.wsaved: dict[int, int] = {}       # the turn's drawn cells of W, as they were before it
        self.wqueue: list[tuple[int, ...]] = []   # cells for the turn's writes to come, in order
        self.wran: list[tuple[int, tuple[int, ...]]] = []   # (seq, cells) of the turn's writes that ran
        self.wcaptured: list[tuple[int, int, tuple[int, ...]]] = []   # (seq, tensor, cells) captured, not committed
        self.wset: dict[int, int] = {}   # cells of W an unstamped turn set from the host, and their values
        self.wseq = 0   # writes made: an output's seq is the last write its call saw
        self.checks = self.failures = self.other_failures = 0
        self.why: dict[bool, dict[str, int]] = {True: {}, False: {}}   # failed checks by kind, by side

    def caller(self, fn: Callable[[Any], Any], checked: bool = False) -> Callable[[], Any]:
        def call():
            j = self.i % len(self.pool)
            a = self.pool[j]
            self.i += 1
            if self.stamping:   # A written right before its call, on its stream (`Stamper`)
                self.restamp(j)
            seq = self.wseq
            out = fn(a)
            k, at = divmod(self.made, self.calls)
            if k < len(self.plan) and at == self.plan[k][0]:
                # right behind the call, on its stream (a graph captures it as a node): what the
                # call had written by the time it returned, not by the end of the round
                _, places, into = self.plan[k]
                self.snap.take(out, places, into)
                self.snaps.append((into, places, a, checked, seq))
            self.made += 1
            self.kept.append((out, a, checked, seq, fn))
            return out
        return call

    def length(self, calls: int) -> int:
        """A round's calls, drawn for each round (both sides of a pair make as many): from half of
        `calls` (at least 2) to `calls`. A fixed length let a kernel that counts calls from a
        round's start (the pool's first A, or a gap on %globaltimer) know the round's last call,
        and put off the work of the others until it: every output is there when checked, but
        batched (review 55, bad/zz56_deferred_batch)."""
        return self.draw.randint(max(2, min(calls, -(-calls // 2))), calls) if calls > 1 else 1

    @_aside
    def begin(self, calls: int = 1, stamp: bool = False) -> None:
        """A caller's turn of `calls` calls a pass starts: the last turn's outputs go; for each of
        the turn's passes, the call whose output is copied right behind it (`Snapshot`; never the
        last, which is checked whole), the places copied and the buffer they go to are drawn and
        made, each pass's apart (a graph's warm-up pass shows nothing of where its capture's copy
        sits); none in a turn of one call. `stamp`: each call of the turn writes its A right
        before it (`Stamper`; where the feed has one): the bench's back-to-back rounds, where a
        kernel could otherwise read ahead through the pool (review 58). With W's `Cells`, the
        turn's cells are drawn (an unstamped turn's set now)."""
        self.kept, self.calls, self.snaps, self.made = [], calls, [], 0
        self.stamping = stamp and self.stamp is not None
        if self.stamp is not None:   # writes captured by a turn that never committed them never ran
            self.stamp.drop()        # (a failed or refused graph): forgotten (review 61, `_restore_cells`)
        self._restore_cells()
        if self.stamping and self.cells is not None:   # distinct cells, so each changes once a turn
            plans = [self._writers(calls) for _ in range(PASSES)]
            at = self.cell_draw.sample(range(self.cells.count), min(self.cells.count, sum(map(len, plans)) * WPOS))
            self.wsaved = dict(zip(at, self.cells.get(at)))
            self.wqueue = [()] * (PASSES * calls)
            n = 0
            for p, writers in enumerate(plans):
                for w in writers:
                    self.wqueue[p * calls + w] = tuple(at[n:n + WPOS])
                    n += WPOS
        elif self.cells is not None:   # no stamp runs (a lone flushed call): the cells set now, untimed
            at = self.cell_draw.sample(range(self.cells.count), min(self.cells.count, WPOS))
            self.wsaved = dict(zip(at, self.cells.get(at)))
            self.wset = {c: weight_half(self.cell_draw.getrandbits(16)) for c in at}
            self.cells.put(at, list(self.wset.values()))
            self.wseq += 1   # a write every call of the turn saw
            self.wran.append((self.wseq, tuple(at)))
        self.plan = [(self.draw.randrange(calls - 1), self.snap.places(self.draw.getrandbits(63)), self.snap.buffer())
                     for _ in range(PASSES)] if self.snap and calls > 1 else []

    def _writers(self, calls: int) -> list[int]:
        """The calls of a pass whose stamps set cells of W: its last, and each other one apart with
        a chance that makes CELL_WRITES in all on average. A cell shows from its own bits, so an
        honest call that reads W whole counts them, and a known number of writers told a kernel
        when W would change no more: with every writer drawn, after the count's last step (review
        65, bad/zz65_cell_count_settled_weights); with the last call and one drawn, between the
        drawn one and the shortest length a round can have (review 66,
        bad/zz66_known_length_settled_weights). Now no count says the writes are over before the
        last call, which always writes and is always checked, and a call that reads a copy of W
        is wrong wherever its own stamp set cells."""
        chance = (CELL_WRITES - 1) / (calls - 1) if calls > 1 else 0.0
        return [w for w in range(calls - 1) if self.cell_draw.random() < chance] + [calls - 1]

    @_aside
    def fresh(self) -> None:
        self.kept = self.kept[-self.calls:]   # (a graph's warm-up pass goes)
        self.snaps = self.snaps[-1:]   # (the capture's, which the timed replay rewrites)
        self.i = 0
        if self.stamping:   # every timed call writes its own A (a replay: the captured writes)
            self.commit()
            return
        for j in reversed(range(len(self.pool))):  # the first calls read the last written: A as a model's
            self.seeds[j] = self.draw.getrandbits(63)   # layer finds it, just written by the op before
            self.fill(self.pool[j], self.seeds[j])

    def restamp(self, j: int) -> None:
        """Pool tensor j written now on the current stream (`Stamper.write`); it counts as written
        once the write has run: at once when enqueued, from `commit()` when captured into a graph
        (review 60: marked when captured, a tensor no write had reached yet was asked for keys it
        never had, and an honest round failed `intact`)."""
        at: tuple[int, ...] = ()
        if self.cells is not None:
            if not self.wqueue:
                raise RuntimeError("stamp: more writes in a turn than cells of W drawn for them")
            at = self.wqueue.pop(0)
        self.wseq += 1
        if self.stamp.write(j, at):
            self.wcaptured.append((self.wseq, j, at))
        else:
            self.seeds[j] = STAMPED
            self.wran.append((self.wseq, at))

    def commit(self) -> None:
        """The writes captured since the last commit are about to run (the graph's timed replay)."""
        self.stamp.commit()
        for seq, j, at in self.wcaptured:
            self.seeds[j] = STAMPED
            self.wran.append((seq, at))
        self.wcaptured.clear()

    def _restore_cells(self) -> None:
        """The last turn's cells of W back to what they held before it (the next turn's reference
        and `weights_intact` find W as it was made), and its writes forgotten, those never
        committed too."""
        if self.wsaved:
            at = list(self.wsaved)
            self.cells.put(at, [self.wsaved[c] for c in at])
        self.wsaved, self.wqueue, self.wran, self.wcaptured, self.wset = {}, [], [], [], {}

    def _cell_columns(self, seq: int) -> frozenset[int]:
        """The output columns that read cells of W set by writes up to `seq`: the checks judge them
        apart (`agreement`'s and `precise`'s `skip`), since the cells' large values would loosen
        every other column's bound (review 62)."""
        return frozenset(c // self.cells.row for s, at in self.wran if s <= seq for c in at)

    @contextlib.contextmanager
    def _weights_at(self, seq: int):
        """W as the call after write `seq` read it (the cells set by later writes that ran hold
        what they held before the turn) while the block runs; W as it is after."""
        later = [c for s, at in self.wran if s > seq for c in at]
        if not later:
            yield
            return
        now = self.cells.get(later)
        self.cells.put(later, [self.wsaved[c] for c in later])
        try:
            yield
        finally:
            self.cells.put(later, now)

    @_aside
    def new_weights(self) -> None:
        """B rewritten in place with new values (the bench does it before each mode), as a user's
        optimizer step or weight sync does: a kernel that kept a copy of B keyed on its pointer
        (a packed or transposed one) answers from the stale copy and fails the checks (review 56)."""
        self._restore_cells()   # (W as made, should rewriting leave any of it)
        if self.rewrite_weights is not None:
            self.rewrite_weights(self.draw.getrandbits(63))

    @_aside
    def intact(self) -> bool:
        """Every pool tensor holds its last fill, or its last stamp that ran (`Stamper.matches`),
        and B what it was made with, bit for bit (nothing to ask of a fill where no `matches` was
        given)."""
        for j, (a, sd) in enumerate(zip(self.pool, self.seeds)):
            if sd == STAMPED and not self.stamp.matches(j):
                return False
            if sd not in (None, STAMPED) and self.matches is not None and not self.matches(a, sd):
                return False
        if self.wset and self.cells.get(list(self.wset)) != list(self.wset.values()):
            return False   # (the cells an unstamped turn set, as set)
        with self._weights_at(-1):   # W but for the turn's cells, which `matches` and the line above checked
            return self.weights_intact is None or self.weights_intact()

    @_aside
    def check(self, untimed: bool = False, last_pass_ran: bool = True, per_call_ms: float | None = None,
              time: Callable[[Callable[[], Any]], float] | None = None) -> None:
        """The operands (`intact`: the reference reads them, so a call that zeroed A, or B, and
        wrote zeros would agree with it: review 55), then the turn's last output and up to
        CHECKS_PER_ROUND - 1 more, drawn now, against the reference on their A; nothing when no
        caller ran since `begin`. Every caller's turn is checked, so both sides of a pair do the
        same untimed work between timed regions (with only ours checked, F.linear against itself
        read 0.959 in graph mode at 12288x12288x4096 on the H100, the checked side 1738 us a call
        and the other 1664: the check's host-synced gaps before the other side's turn let the
        power-capped clock recover); only a `checked` caller's failures count (`failures`,
        `checks`), the other's go to `other_failures`.
        `untimed`: every output kept since `begin`, before `fresh()` (a graph's warm-up pass, and
        its capture's buffers, which hold what the untimed replay wrote; the bench's warm-up
        calls), kept on for the timed check: a kernel that skipped the calls nobody timed started
        its timed region on a cooler GPU than the vendor's, which made them all (review 55).
        `last_pass_ran` False: the turn's last pass was captured into a graph that has not run
        (uploaded, not replayed), so only the passes before it are checked (review 57: checked, the
        unwritten buffers failed every honest round). A stamped turn's untimed check reads only the
        last pass that ran: each pass wrote its A's anew, so an earlier pass's A may be gone.
        With a `rerun`, first, one drawn output of each side's turn is made again (`_made_again`);
        `per_call_ms` (the side's timed calls just measured) and `time` (a timer of one call)
        bound how long that may take."""
        if not untimed:
            turn, snaps = self.kept[-self.calls:], self.snaps[-1:]
        elif self.stamping:
            back = 1 if last_pass_ran else 2   # the last pass that ran, counted from the end
            turn, snaps = self.kept[-back * self.calls:][:self.calls], self.snaps[-back:][:1]
        elif last_pass_ran:
            turn, snaps = self.kept, self.snaps
        else:
            turn, snaps = self.kept[:-self.calls], self.snaps[:-1]
        if not turn:
            return
        picked = [turn[-1]] + self.draw.sample(turn[:-1], min(CHECKS_PER_ROUND - 1, len(turn) - 1))
        intact = self.intact()
        refs: dict[tuple, Any] = {}   # one reference per A and W read, however many outputs of them are checked

        def ref(a, seq):   # (inside `_weights_at(seq)`)
            if (id(a), seq) not in refs:
                refs[(id(a), seq)] = self.reference(a)
            return refs[(id(a), seq)]

        def wrong(out, a, seq) -> str | None:   # which check an output fails, if any, against W as its call read it
            apart = {"skip": self._cell_columns(seq)} if self.cells is not None else {}
            with self._weights_at(seq):
                if not self.compare(out, ref(a, seq), **apart)["agree"]:
                    return "agree"
                if self.precise is not None and not self.precise(out, ref(a, seq), a, self.draw.getrandbits(63), **apart):
                    return "precise"
            return None

        def stale(got, places, a, seq) -> bool:
            with self._weights_at(seq):
                return not self.compare(got, self.snap.pick(ref(a, seq), places))["agree"]
        # first, before any check copies a drawn output: what the call made again does is charged
        # to its side (its harm to the operands, to its old C)
        found = self._made_again(picked, None if untimed else per_call_ms, time) if self.rerun else []
        found += [(checked, wrong(out, a, seq)) for out, a, checked, seq, _ in picked]  # all, always
        found += [(checked, "snapshot" if stale(got, places, a, seq) else None)
                  for got, places, a, checked, seq in snaps]
        for side in (True, False):
            mine = [why for checked, why in found if checked == side]
            if not mine:
                continue
            whys = [why for why in mine if why] + ([] if intact else ["intact"])
            for why in whys:   # which checks failed, counted apart (`why`): a row says why it was refused
                self.why[side][why] = self.why[side].get(why, 0) + 1
            if side:
                self.checks += 1
                self.failures += bool(whys)
            else:
                self.other_failures += bool(whys)
        if not untimed:
            self.kept, self.snaps = [], []

    def _made_again(self, picked: list[tuple], per_call_ms: float | None, time) -> list[tuple[bool, str | None]]:
        """The judge's determinism, which the bench did not ask (review 71: its inputs can be told
        from the judge's, so a kernel could be nondeterministic, an atomic reduction, outside the
        judge alone): one drawn output of each side's turn is made again by its caller's function,
        on a copy of its A at a new address and W as its call read it, and must equal it bit for
        bit. Meanwhile the output is masked (`Rerun.mask`): its bits exist nowhere a kernel could
        copy them from, and a kernel that writes into its old C spoils its own output (reviews 72,
        73). The calls are timed, bounded (RERUN_CALLS), and the operands found intact after them.
        Does not: stop a kernel that keeps its own copy of every output, found by A's contents
        (at decode shapes about M/K of a call's traffic)."""
        bound = None if per_call_ms is None or time is None else RERUN_CALLS * per_call_ms + RERUN_SLACK_MS
        found = []
        for side in sorted({p[2] for p in picked}):
            out, a, checked, seq, fn = self.draw.choice([p for p in picked if p[2] == side])
            a2, key = self.rerun.copy(a), self.draw.getrandbits(64)
            self.rerun.mask(out, key)
            with self._weights_at(seq):
                made, why = self._calls_again(fn, a2, bound, time)
            self.rerun.mask(out, key)
            if why is None and not self.rerun.same(out, made):
                why = "determinism"
            found.append((checked, why or (None if self.intact() else "intact")))
        return found

    def _calls_again(self, fn, a2, bound: float | None, time) -> tuple[Any, str | None]:
        """Calls of `fn(a2)` until two fall within `bound` (ms; None: two calls), each equal to the
        first bit for bit: (the first output, why not, or None)."""
        made, within = None, 0
        for _ in range(RERUN_TRIES):
            box: list = []
            if time is None:   # (an untimed check: made, not timed)
                box.append(fn(a2))
                took = None
            else:
                took = _ungarbaged(time, lambda: box.append(fn(a2)))
            if made is None:
                made = box[0]
            elif not self.rerun.same(made, box[0]):
                return made, "determinism"
            if bound is not None and took > bound + RERUN_CAP_MS:
                return made, "rerun_time"
            within += bound is None or took <= bound
            if within == 2:
                return made, None
        return made, "rerun_time"

    @_aside
    def agreement(self) -> dict:
        """The last call's output against the reference on the A it read."""
        out, a, _, seq, _ = self.kept[-1]
        with self._weights_at(seq):
            return self.compare(out, self.reference(a))
