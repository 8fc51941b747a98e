"""A write of each A right before its call, on the call's stream, with values nobody could know
before: the product bench's answer to reading ahead through its pool (review 58).

Why: the bench's pool of A tensors held its final contents before a round's first call, so a
kernel could compute the next calls' outputs in one pass over B at memory-bound shapes, keep
them, and hand each back right when its call came (bad/zz58_pool_read_ahead: every check
passed). In a model, too, the op before a linear writes its input right before it.

Guarantees:
- `Stamp(ptrs, elems, stream)` covers a pool of equal fp16 tensors (their device addresses, their
  elements). `write(j)` enqueues, on `stream()`'s stream (a graph's capture stream during a
  capture: the write becomes a node, and each replay writes anew), one small kernel that fills
  pool tensor j with N(0, 1) values as fp16 (Box-Muller, two from a hash word: the values
  `gauss_fill` gives the unstamped turns' A, so no statistic tells the two apart) under keys
  that each block draws when it runs: a hash of %globaltimer and %clock64 read then, and of the
  write's nonce. No value exists anywhere before the write runs, so an output computed earlier
  from that memory is stale. Each block logs its key (one small device array per pool tensor,
  made before any capture) and a tag of it under a secret and a fresh nonce that only
  the launch's parameters hold (review 59: an untagged log let a kernel that found it write a
  key of its own and an A to match, whose output it already had).
- with `weights` (W's address), a write also sets the cells of W it is given (`write(j, at)`,
  flat indices the host draws, passed as launch parameters) to magnitudes 64 to 256 from its
  first block's key: a copy of W made before the write is wrong in a whole output column, by far
  more than the checks' bound, and finding the changed cells costs a read of all of W (review 60:
  a 14-bit copy of W kept through a burst of calls passed every check).
- `matches(j)` regenerates tensor j from its logged keys with the same kernel, bit for bit, and
  the cells of W its last write that ran set (forgotten at `drop()`: the feed puts them back),
  checks every tag under the nonce of tensor j's last write that ran, and compares (reads back:
  syncs `stream()`). A write captured into a graph counts from `commit()` (the bench calls it
  right before the timed replay), so a check between the capture and the replay asks for what
  the warm-up pass wrote.
- nothing is allocated or compiled by `write` (all at construction), so it can be captured.
- the stamp leaves no place of W's cells where the call after it can read: it reads its places by
  constant indices (no local frame: review 67), and ends by rewriting its 32-register allotment
  as the snapshot node does, with words of a secret key, so they show nothing either (review 68;
  tests/test_stamp.py reads the SASS).
- `WeightCells` reads and sets W's cells for the feed (between turns) with a kernel whose launch
  parameters hold the places: no device memory holds a turn's places (review 62: an index tensor
  made right before the turn did, and a kernel could scan for it).

Does not: stop a kernel from reading the log (the next key needs the clocks of a launch that
has not run), check cells of W set by a write superseded in the same turn (the feed puts them
back; a kernel cannot find them without reading W whole), or time anything; it costs both sides
of a pair the same small kernel a call (the bench records what a call of it alone takes:
`stamp_us`).
"""

from __future__ import annotations

import ctypes
import math
import random
import secrets
from typing import Callable, Sequence

from cudal2.harness.streams import cupy_stream

BLOCK = 256
MAX_BLOCKS = 1024           # keys logged per tensor; a block's share of A is contiguous
# Elements a block takes before the grid grows: one unit of four a thread. A thread's turns run one
# after another, each ~150 instructions of two hashes and two Box-Muller pairs, and a small A gets
# few blocks, so the stamp's latency there was its turns: 32 elements a thread took 4.5-6.8 us a
# call at M <= 128 on the H100 (2026-12-07, against 2.3-3.3 for the 12-bit stamp), a third of a
# decode call, on both sides of every pair. Past MAX_BLOCKS x PER_BLOCK elements the grid is capped
# and each thread takes more turns, as before.
PER_BLOCK = 4 * BLOCK
WPOS = 2                    # cells of W a write sets beside its A (one would do; two for margin)


CELLS_MAX = 128             # cells one launch of cudal2_cells reads or sets


class Cells(ctypes.Structure):
    """The kernel's `Cells` parameter, by value: flat indices into W, -1 for none."""
    _fields_ = [("at", ctypes.c_longlong * WPOS)]


class CellList(ctypes.Structure):
    """cudal2_cells's `CellList` parameter, by value: places and, to set, their values."""
    _fields_ = [("at", ctypes.c_longlong * CELLS_MAX), ("v", ctypes.c_ushort * CELLS_MAX)]

_SRC = r"""
// Two N(0, 1) draws as fp16 (guards.GAUSS_SRC's `gauss2`). The unstamped turns' A is filled with
// these same values (`cudal2_gauss_fill`, under keys from a host seed), so no statistic of A's
// values tells a stamped call from an unstamped one: with torch's normal_ there, its rarest pairs did
// (its largest radius stops at 5.77: on an A of ~1M elements or more, review 69, host emulation). The
// first stamp of that kind (|x| in [0.5, 2), 12 bits an element) was found from 64 exponent fields:
// a kernel could run honest on stamped A alone, and otherwise as it liked where no stamp ran
// (bad/zz64, and a user's calls). Knowing a key from the values gives nothing ahead: the next key
// needs the clocks of a launch that has not run. Every launch, `matches`' too, runs this same code,
// so it makes the same bits.
__device__ __forceinline__ unsigned stamp_pair(u64 h) {
    const float2 g = gauss2(h);
    return (unsigned)__half_as_ushort(__float2half_rn(g.x)) |
           (unsigned)__half_as_ushort(__float2half_rn(g.y)) << 16;
}
// Four elements of unit u of a block's key k: two hash words (splitmix64's finalizer of k ^ 2u and
// k ^ 2u+1), two draws each.
__device__ __forceinline__ u64 stamp_quad(u64 k, u64 u) {
    return (u64)stamp_pair(mix(k ^ (u << 1))) | (u64)stamp_pair(mix(k ^ (u << 1) ^ 1u)) << 32;
}
// This block's share of X (n elements, a run of whole units), from key k.
__device__ __forceinline__ void stamp_share(unsigned short* X, long long n, u64 k) {
    const long long units = (n + 3) / 4, per = (units + gridDim.x - 1) / gridDim.x;
    const long long lo = blockIdx.x * per, hi = lo + per < units ? lo + per : units;
    for (long long u = lo + threadIdx.x; u < hi; u += blockDim.x) {
        const u64 q4 = stamp_quad(k, (u64)u);
        if (4 * u + 3 < n) {
            *(ulonglong1*)&X[4 * u] = make_ulonglong1(q4);
        } else {
            for (int q = 0; q < 4 && 4 * u + q < n; ++q) X[4 * u + q] = (unsigned short)(q4 >> (16 * q));
        }
    }
}

// keys[b]: block b's key; keys[MAX_BLOCKS + b]: its tag, prf(secret ^ nonce, key ^ b), which only a
// holder of `secret` (the launch's parameters, never memory) can make for a key: a log rewritten by
// anyone else has no valid tag, and each write's nonce is new, so no earlier (key, tag) pair passes
// for a later write. A write's key is a hash of the clocks when its block starts (no log read: the
// read's latency was most of a small write's time) and of the nonce.
// A few cells of the weights, at places the host drew (kernel parameters: no memory holds them), set
// to magnitudes 64 to 256 from block 0's key (review 60): a copy of W made before this write is wrong
// in a whole output column, by far more than the check's bound, and finding which cell changed costs
// a read of all of W. Magnitudes a Gaussian W never has (exponent fields 21 and 22).
__device__ __forceinline__ unsigned short weight_half(u64 h) {
    return (unsigned short)((h & 0x8000u) | (((h >> 10) & 1u) ? 0x5800u : 0x5400u) | (h & 0x3FFu));
}
struct Cells { long long at[WPOS]; };

// Bounded to a 32-register allotment, and ended by rewriting it (`wash_registers`, as the snapshot
// node ends, under a key of the launch's secret): block 0's threads held the addresses of W's
// cells, the rest their blocks' keys, and the call right after reads registers it never wrote
// (tests/test_stamp.py reads the SASS); and its predicates before that (`wash_predicates`, as the
// register scrub does): every build left P0 set and P1 clear in every lane, which no scrub does.
extern "C" __global__ void __launch_bounds__(BLOCK, 8)
cudal2_stamp(unsigned short* X, long long n, u64* keys, u64 secret, u64 nonce, unsigned* bad, unsigned short* W,
             Cells cells, unsigned* sink) {
    __shared__ u64 key;
    if (threadIdx.x == 0) {
        u64 k;
        if (!bad) {   // drawn now, from clocks no earlier launch could read: the values did not exist before
            u64 t;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
            k = mix(nonce ^ mix(t ^ ((u64)clock64() << 21) ^ ((u64)blockIdx.x << 54)));
        } else {
            k = keys[blockIdx.x];
        }
        key = k;
    }
    __syncthreads();
    const u64 k = key;
    // the wash's key, which no kernel can know: under key 0 its words were a signature the next
    // call could read as "my A was just stamped" (review 68); and the shared copy of the block's
    // key replaced by it once every thread has read it
    const u64 washed = prf(secret ^ nonce, ~k ^ blockIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) key = washed;
    // each thread's place by constant indices: `cells.at[threadIdx.x]` made ptxas copy the whole
    // parameter into a local frame in every thread of every block, where the next launch could
    // read it back (review 67: local memory is not scrubbed between the stamp and its call)
    long long place = -1;
#pragma unroll
    for (int i = 0; i < WPOS; ++i) place = threadIdx.x == i ? cells.at[i] : place;
    if (blockIdx.x == 0 && threadIdx.x < WPOS && W && place >= 0) {
        unsigned short* w = W + place;
        const unsigned short v = weight_half(mix(k ^ mix(~(u64)threadIdx.x)));   // (A's units hash k ^ 2u, k ^ 2u+1)
        if (!bad) {
            *w = v;
        } else if (*w != v) {
            atomicAdd(bad, 1u);
        }
    }
    stamp_share(X, n, k);
    if (threadIdx.x == 0) {   // the tag last: its hash overlaps the other warps' writes
        const u64 tag = prf(secret ^ nonce, k ^ blockIdx.x);
        if (!bad) {
            keys[blockIdx.x] = k;
            keys[MAX_BLOCKS + blockIdx.x] = tag;
        } else if (keys[MAX_BLOCKS + blockIdx.x] != tag) {
            atomicAdd(bad, 1u);
        }
    }
    wash_predicates(washed, threadIdx.x, sink);   // (review 69: its exit predicates told a stamp from a scrub)
    wash_registers(washed, threadIdx.x, sink);
}

// The unstamped turns' fill (`gauss_fill`): the stamp's own values, under block keys from a host
// seed, so a stamped A and an unstamped one come from one generator. torch's normal_ (curand's
// Box-Muller) puts its smallest radii on a 2^-24 grid and the stamp's are off it, which told the two
// apart on an A of ~1M elements or more (review 69).
extern "C" __global__ void __launch_bounds__(BLOCK) cudal2_gauss_fill(unsigned short* X, long long n, u64 seed) {
    stamp_share(X, n, mix(seed ^ mix(~(u64)blockIdx.x)));
}

// An output hidden while the feed makes its call again (`mask`; review 73): each element XORed with
// 16 bits of mix(key ^ mix(i)), the key only in the launch's parameters and the registers the scrub
// after it rewrites. The same launch again gives the output back; meanwhile its bits exist nowhere
// a kernel could copy them from, and a kernel that writes into its old C spoils its own output.
extern "C" __global__ void __launch_bounds__(BLOCK) cudal2_mask(unsigned short* X, long long n, u64 key) {
    for (long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * BLOCK)
        X[i] ^= (unsigned short)mix(key ^ mix((u64)i));
}

// The feed's reads and sets of W's cells (before a turn, to keep what they held; after it, to put
// them back): the places travel as launch parameters, as the stamp's do. An index array in device
// memory, made right before a turn, showed a kernel every cell the turn would set (review 62).
struct CellList { long long at[CELLS_MAX]; unsigned short v[CELLS_MAX]; };

extern "C" __global__ void cudal2_cells(unsigned short* W, unsigned short* out, int n, CellList list) {
    const int i = threadIdx.x;
    if (i < n) {
        if (out) {
            out[i] = W[list.at[i]];
        } else {
            W[list.at[i]] = list.v[i];
        }
    }
}
"""


def weight_half(h: int) -> int:
    """The kernel's `weight_half` of a hash word's low 16 bits: an fp16 bit pattern of magnitude 64
    to 256, either sign (the value the feed sets a cell of W to where no stamp runs)."""
    return (h & 0x8000) | (0x5800 if (h >> 10) & 1 else 0x5400) | (h & 0x3FF)


def blocks(elems: int) -> int:
    return max(1, min(MAX_BLOCKS, math.ceil(elems / PER_BLOCK)))


def source() -> str:
    from cudal2.harness.guards import GAUSS_SRC, PRF_SRC, REG_WORDS, WASH_SRC
    return (PRF_SRC + f"#define MAX_BLOCKS {MAX_BLOCKS}\n#define WPOS {WPOS}\n#define CELLS_MAX {CELLS_MAX}\n"
            f"#define BLOCK {BLOCK}\n#define REG_WORDS {REG_WORDS}\n" + WASH_SRC + GAUSS_SRC + _SRC)


def _kernel(name: str) -> ctypes.c_void_p:
    """One of `source()`'s kernels, compiled once (NVRTC), as a CUfunction."""
    from cudal2.harness import rawkernels
    return ctypes.c_void_p(rawkernels.function(source(), name).kernel.ptr)


def _scrubbed_over(name: str, ptr: int, elems: int, key: int, stream: int) -> None:
    """Enqueue on `stream` kernel `name` over `elems` fp16 at `ptr` under `key`, then the judge's
    register scrubs on the same stream (its threads held the key, or keys derived from it)."""
    from cudal2.harness import driver
    vals = (ctypes.c_void_p(ptr), ctypes.c_longlong(elems), ctypes.c_uint64(key % (1 << 64)))
    driver.check(driver.lib().cuLaunchKernel(_kernel(name), blocks(elems), 1, 1, BLOCK, 1, 1, 0,
                                             stream, driver.params(vals), None), f"cuLaunchKernel({name})")
    with cupy_stream(stream):
        _scrub()


def gauss_fill(ptr: int, elems: int, seed: int, stream: int) -> None:
    """Enqueue on `stream` a fill of `elems` fp16 at `ptr` (8-byte aligned) with the stamp's N(0, 1)
    values under keys from `seed`: the same bits for the same seed, and the stamp's distribution.
    Then the judge's register scrubs on the same stream: the fill's block keys stay in registers,
    and inverting `mix` on one gives the seed (review 70)."""
    _scrubbed_over("cudal2_gauss_fill", ptr, elems, seed, stream)


def mask(ptr: int, elems: int, key: int, stream: int) -> None:
    """Enqueue on `stream` the XOR of `elems` fp16 at `ptr` with a keystream of `key`; the same call
    again undoes it (`cudal2_mask`). Then the register scrubs: the key unmasks the output."""
    _scrubbed_over("cudal2_mask", ptr, elems, key, stream)


def _scrub() -> None:
    """The register scrubs the judge runs before a call (`guards.scrub_regs`), on the current
    stream, after a kernel of this module whose registers held what no call may read (a launch can
    read registers it never wrote: wgmma with run-time scale-d read 22% of an earlier launch's words
    on the H100, eval/README): the cells kernel's threads formed W + place (`WeightCells.get` in
    `Feed.begin` reads every cell the turn will set), and the fill's block keys give its seed back
    through `mix`."""
    from cudal2.harness import guards
    guards.scrub_regs()


class Stamp:
    def __init__(self, ptrs: Sequence[int], elems: int, stream: Callable[[], int], weights: int = 0):
        """`weights`: the device address of W (fp16), whose cells a write may set beside its A
        (`write`'s `at`), or 0 for none."""
        import cupy as cp
        import numpy as np

        from cudal2.harness import driver
        self.cp, self.ptrs, self.elems, self.stream, self.driver = cp, list(ptrs), elems, stream, driver
        self.grid = blocks(elems)
        self.keys = cp.asarray(np.frombuffer(secrets.token_bytes(16 * MAX_BLOCKS * len(self.ptrs)), dtype=np.uint64)
                               .reshape(len(self.ptrs), 2 * MAX_BLOCKS))
        self.secret = secrets.randbits(64)
        self.draw = random.Random(secrets.randbits(128))   # the nonces (no kernel reads host memory)
        # of each tensor's last write that has run (or will, eagerly): its nonce and W's cells it set
        self.nonce: dict[int, tuple[int, tuple[int, ...]]] = {}
        self.pending: dict[int, tuple[int, tuple[int, ...]]] = {}   # captured into a graph not run yet
        self.fn = _kernel("cudal2_stamp")
        self.cu = driver.lib()
        self.status = ctypes.c_int()
        self.scratch = cp.empty(elems, dtype=cp.float16)
        self.bad = cp.zeros(1, dtype=cp.uint32)
        self.sink = cp.zeros(1, dtype=cp.uint32)   # (keeps the stamp's closing wash from being optimized away)
        # each tensor's arguments made once (a write sets only its nonce and cells): the eager path
        # pays a launch, not argument building, between the calls it sits between
        self.writes = [self._args(p, j, 0, weights) for j, p in enumerate(self.ptrs)]
        self.checks = [self._args(self.scratch.data.ptr, j, self.bad.data.ptr, weights)
                       for j in range(len(self.ptrs))]

    def _args(self, ptr: int, j: int, bad: int, weights: int):
        vals = (ctypes.c_void_p(ptr), ctypes.c_longlong(self.elems), ctypes.c_void_p(self.keys[j].data.ptr),
                ctypes.c_uint64(self.secret), ctypes.c_uint64(0), ctypes.c_void_p(bad), ctypes.c_void_p(weights),
                Cells(), ctypes.c_void_p(self.sink.data.ptr))
        return vals, self.driver.params(vals)

    def _launch(self, args, nonce: int, at: Sequence[int], stream: int) -> None:
        if len(at) > WPOS:
            raise ValueError(f"stamp: {len(at)} cells of W in one write, at most {WPOS}")
        args[0][4].value = nonce
        for i in range(WPOS):
            args[0][7].at[i] = at[i] if i < len(at) else -1
        self.driver.check(self.cu.cuLaunchKernel(self.fn, self.grid, 1, 1, BLOCK, 1, 1, 0, stream, args[1], None),
                          "cuLaunchKernel(cudal2_stamp)")

    def write(self, j: int, at: Sequence[int] = ()) -> bool:
        """Enqueue tensor j's write, which also sets W's cells `at` (flat indices, at most WPOS);
        True when it was captured into a graph (it runs when the graph does, and counts from
        `commit()`)."""
        s, nonce = self.stream(), self.draw.getrandbits(64)
        self._launch(self.writes[j], nonce, at, s)
        self.driver.check(self.cu.cuStreamIsCapturing(s, ctypes.byref(self.status)), "cuStreamIsCapturing")
        (self.pending if self.status.value else self.nonce)[j] = (nonce, tuple(at))
        return bool(self.status.value)

    def commit(self) -> None:
        """The captured writes are about to run (the graph's timed replay) or have run: their
        nonces are the ones a check asks for from now on."""
        self.nonce.update(self.pending)
        self.pending.clear()

    def drop(self) -> None:
        """A new turn: the captured writes will never run (their graph failed, or was refused
        before its replay): forgotten, so no later commit counts them (review 61); and the cells
        of W that earlier writes set are back as they were (the feed puts them back), so no check
        asks for them."""
        self.pending.clear()
        self.nonce = {j: (nonce, ()) for j, (nonce, _) in self.nonce.items()}

    def matches(self, j: int) -> bool:
        """Tensor j, and the cells of W its last write that ran set, hold what that write wrote."""
        if j not in self.nonce:   # asked before any write of it ran: the caller's bookkeeping, not a kernel
            raise RuntimeError(f"stamp: pool tensor {j} has no write that ran")
        cp, s = self.cp, self.stream()
        with cupy_stream(s):
            self.bad.fill(0)
            self._launch(self.checks[j], *self.nonce[j], s)
            mem = cp.cuda.UnownedMemory(self.ptrs[j], 2 * self.elems, self)
            got = cp.ndarray((self.elems,), cp.uint16, cp.cuda.MemoryPointer(mem, 0))
            return bool((got == self.scratch.view(cp.uint16)).all()) and int(self.bad.get()[0]) == 0


class WeightCells:
    """`feed.Cells` of an fp16 W (its address, rows and row length) on `stream()`'s stream: `get`
    reads cells (fp16 bit patterns), `put` sets them, through `cudal2_cells`, whose launch
    parameters alone hold the places: no device memory does, before, during or after (review 62),
    and the register file is scrubbed after each (`_scrub`). Not for use inside a capture (the feed
    reads and sets cells between turns only)."""

    def __init__(self, ptr: int, rows: int, row: int, stream: Callable[[], int]):
        import cupy as cp

        from cudal2.harness import driver
        self.cp, self.driver, self.stream, self.cu = cp, driver, stream, driver.lib()
        self.count, self.row = rows * row, row
        self.fn = _kernel("cudal2_cells")
        self.out = cp.empty(CELLS_MAX, dtype=cp.uint16)
        self.vals = (ctypes.c_void_p(ptr), ctypes.c_void_p(0), ctypes.c_int(0), CellList())
        self.args = driver.params(self.vals)

    def _launch(self, at, vals, out: int, s: int) -> None:
        self.vals[1].value, self.vals[2].value = out, len(at)
        for i, c in enumerate(at):
            self.vals[3].at[i] = c
            self.vals[3].v[i] = vals[i] if vals else 0
        self.driver.check(self.cu.cuLaunchKernel(self.fn, 1, 1, 1, CELLS_MAX, 1, 1, 0, s, self.args, None),
                          "cuLaunchKernel(cudal2_cells)")

    def get(self, at: Sequence[int]) -> list[int]:
        got: list[int] = []
        s = self.stream()
        st = cupy_stream(s)
        with st:
            for i in range(0, len(at), CELLS_MAX):
                part = at[i:i + CELLS_MAX]
                self._launch(part, None, self.out.data.ptr, s)
                got += self.out[:len(part)].get(stream=st).tolist()
            self.out.fill(0)   # (values, not places; kept nowhere once read: review 63)
            _scrub()
        return got

    def put(self, at: Sequence[int], vals: Sequence[int]) -> None:
        s = self.stream()
        with cupy_stream(s):
            for i in range(0, len(at), CELLS_MAX):
                self._launch(at[i:i + CELLS_MAX], vals[i:i + CELLS_MAX], 0, s)
            _scrub()
