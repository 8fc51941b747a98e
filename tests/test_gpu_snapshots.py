"""Snapshot nodes see an output that a later call of the same graph replay completes, and nothing
in an honest replay; each replay arms each node independently (as many as asked on average),
under keys of its own."""

import cupy as cp
import pytest

from cudal2.harness import snapshots, timing

pytestmark = pytest.mark.gpu

SETS = 6


def replay(defer: bool, k: int | None, replays: int = 1) -> int:
    """Mismatches over `replays` replays of a graph over SETS outputs: honest (call i writes C[i])
    or deferring (only the last call writes, every C at once)."""
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        C = [cp.empty((64, 96), cp.float16) for _ in range(SETS)]

        def call(i: int) -> None:
            if not defer:
                C[i].fill(i + 1)
            elif i == SETS - 1:
                for j in range(SETS):
                    C[j].fill(j + 1)

        snaps = snapshots.Snapshots(C, stream, SETS)
        graph = timing.capture(stream, call, list(range(SETS)), after=snaps.capture)
        for _ in range(replays):
            for c in C:
                c.fill(-7)   # what a call finds before it writes: never the answer
            snaps.arm(graph, k)
            graph.launch(stream)
            snaps.verify()
        stream.synchronize()
        return snaps.mismatches()


def test_an_honest_replay_has_no_mismatch():
    assert replay(defer=False, k=None) == 0
    assert replay(defer=False, k=2, replays=5) == 0


def test_deferring_outputs_to_a_later_call_is_seen():
    assert replay(defer=True, k=None) > 0


def test_one_snapshot_per_replay_on_average_finds_deferral_within_a_few_replays():
    # Five of six calls defer; each node is armed with probability 1/6: a replay misses all five
    # deferred calls with probability (5/6)^5 = 0.40, twelve replays in a row 2e-5.
    assert replay(defer=True, k=1, replays=12) > 0


def test_each_replay_arms_independently_at_fresh_keys():
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        C = [cp.zeros((8, 8), cp.float16) for _ in range(SETS)]
        snaps = snapshots.Snapshots(C, stream, SETS)
        graph = timing.capture(stream, lambda i: C[i].fill(1), list(range(SETS)), after=snaps.capture)
        counts, keys = [], set()
        for _ in range(300):
            snaps.arm(graph, 2)
            counts.append(len(snaps.armed))
            new = {a[3] for a in snaps.armed}
            assert keys.isdisjoint(new)
            keys |= new
        assert 1.6 < sum(counts) / len(counts) < 2.4 and len(set(counts)) > 2   # about 2, not always 2
        snaps.arm(graph, None)
        assert len(snaps.armed) == SETS


def test_arming_rewrites_every_row_of_the_snapshot_buffer():
    # a row left unarmed is read by nobody: it must not keep what a call stored there
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        C = [cp.zeros((8, 8), cp.float16) for _ in range(SETS)]
        snaps = snapshots.Snapshots(C, stream, SETS)
        graph = timing.capture(stream, lambda i: C[i].fill(1), list(range(SETS)), after=snaps.capture)
        snaps.buf.fill(0x5E)
        snaps.arm(graph, 0)
        stream.synchronize()
        assert not snaps.armed and int((snaps.buf == 0x5E).sum()) < snaps.buf.size // 64
