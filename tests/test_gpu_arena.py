"""An arena leaves no byte unaccounted for: every byte outside its buffers is checked background,
including the slack after a buffer of odd size, and its layout carries no fixed alignment."""

import cupy as cp
import pytest

from cudal2.harness import buffers

pytestmark = pytest.mark.gpu

SIZES = [1000, 3, 4096, 0, 77777]


@pytest.fixture
def arena():
    return buffers.Arena(SIZES, 4096)


def test_fresh_arena_is_undamaged(arena):
    assert arena.damage() == (0, -1)


def test_writes_inside_buffers_are_not_damage(arena):
    for i, n in enumerate(SIZES):
        arena.raw[arena.offsets[i]:arena.offsets[i] + n] = 7
    assert arena.damage() == (0, -1)


@pytest.mark.parametrize("region", [0, 1, 4])
def test_the_byte_after_each_buffer_is_checked(arena, region):
    end = arena.offsets[region] + SIZES[region]
    arena.raw[end] = arena.raw[end] ^ 1
    bad, first = arena.damage()
    assert (bad, first) == (1, end)
    assert arena.where(first) == (region, 0)


def test_the_last_page_byte_is_checked(arena):
    arena.raw[-1] = arena.raw[-1] ^ 0x80
    assert arena.damage() == (1, arena.nbytes - 1)


def test_regions_are_256_aligned_in_whole_pages_and_do_not_overlap(arena):
    assert arena.nbytes % buffers.PAGE == 0
    spans = sorted((o, o + s) for o, s in zip(arena.offsets, SIZES))
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))
    assert all(arena.ptr(i) % buffers.ALIGN == 0 for i in range(len(SIZES)))


def test_offsets_are_random_beyond_256_bytes():
    # The stages cannot be told apart by alignment: offsets vary above the 256-byte grain.
    seen = {buffers.Arena([4096], 65536).ptr(0) % (1 << 21) for _ in range(8)}
    assert len(seen) > 1


def test_the_address_pad_is_a_random_whole_number_of_pages_made_once():
    size = buffers.pad_address_space()
    assert size % buffers.PAGE == 0 and 0 <= size < buffers.PAD_PAGES * buffers.PAGE
    assert buffers.pad_address_space() == size


def test_randomize_leaves_nothing_of_what_was_stored():
    x = cp.full(1 << 20, 0x5EED, dtype=cp.uint64)
    buffers.randomize(x)
    first = x.copy()
    buffers.randomize(x)
    assert int((first == 0x5EED).sum()) == 0 and int((first == x).sum()) == 0


def test_the_judges_scrub_rewrites_its_cublaslt_workspaces():
    from cudal2.harness import judge
    from cudal2.problem import Problem
    judge._shared_lt(Problem(256, 256, 256), 1)
    ws = [w for _, w in judge._shared["lt"].values()]
    for w in ws:
        w.view(cp.uint64)[:] = 0x5EED
    judge.scrub_chip()
    assert all(int((w.view(cp.uint64) == 0x5EED).sum()) == 0 for w in ws)
