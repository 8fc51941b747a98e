"""Call-boundary snapshots in offline graphs: each call's output is final when that call ends.

The spot checks look at every call's output only after a whole replay, so on their own they
cannot tell a call that computed its C from one whose C a later call of the same replay filled in
(deferral: the state carrying the earlier calls' pointers can sit on the chip, which the harness
scrubs between replays but not between the calls of one).

Guarantees:
- `Snapshots.capture(i)`, during a runner's graph capture right after its call on set `i`, adds
  a snapshot node (its slot: the call's position in the graph): it copies SAMPLES bytes of that
  call's output, at
  positions drawn under a key, into a buffer of the harness's own (any dtype: bytes are
  compared);
- `arm(graph, k)` before a replay disables the nodes armed last time and arms each node
  independently with probability k / (number of calls) (every node with `k` None), each under a
  new key set into the node's own parameters: neither where nor when a snapshot is taken exists
  anywhere while the calls before it run, and, the count being random, what a call can learn of
  the snapshots already taken in a replay (an armed node delays the next call) says nothing of
  those still to come (a fixed count would: after the last one, nothing later is checked);
- `verify()` after the replay compares each armed snapshot with the same positions of the final C
  (`mismatches()` reads the count): an output that changed after its call ended is a mismatch;
- a snapshot node leaves neither its key nor its row's address in vector registers for the next
  call to read: it ends by rewriting its register allotment but the stack pointer (the uniform
  registers, which hold the row's and C's addresses but not the key, are not covered);
- every runner's graph gets the same nodes, armed with the same probabilities, so the snapshots
  cost every runner the same on average (one small kernel per armed node; a disabled node is an
  empty node).

Does not: check values (the spot checks do), cover calls outside offline graphs (the server
mode's calls are each scrubbed before and checked after), or choose how many to arm.
"""

from __future__ import annotations

import ctypes
import random
import secrets

import cupy as cp
import numpy as np

from cudal2.harness import buffers, driver, guards, rawkernels
from cudal2.harness.guards import PRF_SRC, REG_WORDS, WASH_SRC

SAMPLES = 256     # bytes per snapshot: a call that leaves 1% of its output to later calls is seen 92% of the time
THREADS = 256

# The snapshot node runs inside the timed graph between two calls of the runner, with no scrub
# after it, so the next call could read the registers it leaves through registers it never wrote
# (review 27, from its SASS: key ^ a SipHash constant, mix(key) and the row's address sat in vector
# registers at exit) and, with the key and the row, finish its output late and rewrite the row to
# match. So the kernel ends by rewriting its whole allotment (32 registers at 256 threads x 8
# blocks) with the register scrub's `wash_registers` under key 0: words derived from the thread
# index alone, no secret (tests/test_snapshots_sass.py reads the SASS).
_SRC = PRF_SRC + WASH_SRC + r"""
extern "C" __global__ void __launch_bounds__(256, 8)
cudal2_snap(const unsigned char* C, long long nbytes, u64 key, unsigned char* out, unsigned* sink) {
    for (int t = threadIdx.x; t < SAMPLES; t += blockDim.x) out[t] = C[prf(key, (u64)t) % (u64)nbytes];
    wash_registers(0, threadIdx.x, sink);
}
extern "C" __global__ void cudal2_snap_check(const unsigned char* C, long long nbytes, u64 key,
                                             const unsigned char* snap, unsigned* bad) {
    for (int t = threadIdx.x; t < SAMPLES; t += blockDim.x)
        if (C[prf(key, (u64)t) % (u64)nbytes] != snap[t]) atomicAdd(bad, 1u);
}
"""
_OPTIONS = (f"-DSAMPLES={SAMPLES}", f"-DREG_WORDS={REG_WORDS}")


def _fns():
    """(snapshot, check) kernels (compiled and looked up once: `rawkernels`)."""
    return tuple(rawkernels.function(_SRC, n, _OPTIONS) for n in ("cudal2_snap", "cudal2_snap_check"))


class Snapshots:
    """One runner's snapshot nodes over its sets' outputs `C` (one array per set, any dtype), for a
    graph of at most `calls` calls."""

    def __init__(self, C: list[cp.ndarray], stream: cp.cuda.Stream, calls: int):
        # Device addresses (cupy arrays or torch tensors: both have nbytes).
        self.C = [c.data_ptr() if hasattr(c, "data_ptr") else c.data.ptr for c in C]
        self.stream = stream
        self.nbytes = C[0].nbytes
        self.buf = cp.empty((calls, SAMPLES), dtype=cp.uint8)
        self.nodes: list[tuple[int, int]] = []            # (node, set), in graph order: slot = index
        self.armed: list[tuple[int, int, int, int]] = []  # (node, set, slot, key)
        self.live: list[int] = []                         # nodes enabled now (a captured node is)
        self.bad = cp.zeros(1, dtype=cp.uint32)
        self.rng = random.SystemRandom()
        _fns()   # loaded now: no module may load during a capture

    def capture(self, i: int) -> None:
        """During capture, right after the call on set `i`: its snapshot node (disabled by `arm`)."""
        slot = len(self.nodes)
        snap, _ = _fns()
        snap((1,), (THREADS,), (np.uint64(self.C[i]), np.int64(self.nbytes), np.uint64(0), self.buf[slot],
                                np.uint64(0)))
        self.nodes.append((driver.capture_tail(self.stream.ptr), i))
        self.live.append(self.nodes[-1][0])

    def arm(self, graph: cp.cuda.Graph, k: float | None) -> None:
        """Before a replay of `graph`: each snapshot node armed with probability k / len(nodes),
        independently, under a fresh key (every node with `k` None); the others disabled."""
        for node in self.live:
            driver.set_node_enabled(graph.graphExec, node, False)
        # Rows this replay leaves unarmed are read by nobody: random, not what a call stored there.
        buffers.randomize(self.buf)
        n = len(self.nodes)
        slots = range(n) if k is None else [s for s in range(n) if self.rng.random() < k / n]
        snap, _ = _fns()
        self.armed = []
        for slot in slots:
            node, i = self.nodes[slot]
            key = secrets.randbits(64)
            args = [ctypes.c_uint64(self.C[i]), ctypes.c_int64(self.nbytes), ctypes.c_uint64(key),
                    ctypes.c_uint64(self.buf[slot].data.ptr), ctypes.c_uint64(0)]
            driver.set_kernel_node(graph.graphExec, node, snap.kernel.ptr, 1, THREADS, args)
            driver.set_node_enabled(graph.graphExec, node, True)
            self.armed.append((node, i, slot, key))
        self.live = [a[0] for a in self.armed]
        guards.scrub_regs()   # randomize's registers held the rows' address: not for the replay to read

    def verify(self) -> None:
        """Enqueue, after the replay: each armed snapshot against the final outputs."""
        _, check = _fns()
        for _, i, slot, key in self.armed:
            check((1,), (THREADS,), (np.uint64(self.C[i]), np.int64(self.nbytes), np.uint64(key), self.buf[slot],
                                     self.bad))

    def mismatches(self) -> int:
        """Snapshotted outputs that differed from the final ones, over every verify so far (syncs)."""
        return int(self.bad.get()[0])
