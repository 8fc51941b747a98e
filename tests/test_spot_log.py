"""The spot checks' log, host half: the tag proves that exactly n checks ran and found nothing, and a
count a call leaves behind cannot make a failing check look clean (ninth review: failures preset
to wrap to zero). The device half is `cudal2_spot` (guards.py); these tests run a transcription of
its counting, and the GPU judge tests run the kernel."""

import numpy as np
import pytest

pytest.importorskip("cupy")
from cudal2.harness import guards  # noqa: E402


class Words(np.ndarray):
    def get(self):
        return np.array(self)


def log() -> guards.Log:
    g = guards.Log.__new__(guards.Log)
    g.buf, g.mac, g._tags = np.zeros(16, dtype=np.uint32).view(Words), 0x1234_5678_9ABC_DEF0, [0]
    return g


def check(g: guards.Log, call: int, failures: int) -> None:
    """What the host's open_check and one cudal2_spot launch do to the words."""
    v = g.buf
    v[1] = v[2] = 0                                   # open_check, on the stream before the launch
    v[1] = (int(v[1]) + failures) & 0xFFFFFFFF
    v[3] = (int(v[3]) + failures) & 0xFFFFFFFF
    tag = guards.prf(g.mac, (int(v[11]) << 32 | int(v[10])) ^ (call << 32) ^ int(v[1]))
    v[10], v[11] = tag & 0xFFFFFFFF, tag >> 32


def test_clean_checks_are_authentic():
    g = log()
    for n in range(5):
        check(g, n, 0)
    assert g.read(5) == (0, None, True)


def test_a_missing_check_is_not_authentic():
    g = log()
    for n in range(4):
        check(g, n, 0)
    assert not g.read(5)[2]


def test_a_failing_check_is_not_authentic_whatever_the_counts_say():
    g = log()
    check(g, 0, 0)
    g.buf[1] = g.buf[3] = (1 << 32) - 32      # a call presets both counters to wrap to zero...
    check(g, 1, 32)                            # ...and its 32 wrong outputs are found
    failures, _, authentic = g.read(2)
    assert failures == 0 and not authentic    # the report reads clean; the tag does not

