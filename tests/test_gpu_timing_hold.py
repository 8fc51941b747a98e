"""timing.hold keeps the GPU waiting until the host has queued the timed work, so a slow host
between the start event and the call stays out of the time; it gives up by itself at its deadline."""

import time

import cupy as cp
import pytest

from cudal2.harness import timing

pytestmark = pytest.mark.gpu


def test_a_slow_host_after_the_start_event_is_not_timed():
    stream = cp.cuda.Stream(non_blocking=True)
    x = cp.zeros(1 << 20, dtype=cp.float32)
    release = timing.hold(stream)
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record(stream)
    time.sleep(0.05)                      # the host takes 50 ms to launch the call
    with stream:
        x += 1
    e1.record(stream)
    release()
    stream.synchronize()
    assert cp.cuda.get_elapsed_time(e0, e1) < 5.0 and float(x[0]) == 1.0


def test_without_a_release_it_ends_at_its_deadline():
    stream = cp.cuda.Stream(non_blocking=True)
    timing.hold(stream, max_s=0.02)
    t0 = time.monotonic()
    stream.synchronize()
    assert 0.01 < time.monotonic() - t0 < 2.0
