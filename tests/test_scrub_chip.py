"""What `judge.scrub_chip` rewrites besides the chip (no GPU: the rewrites are recorded, not run)."""

from types import SimpleNamespace

from cudal2.harness import buffers, guards, judge, timing


def test_scrub_chip_rewrites_every_long_lived_harness_buffer(monkeypatch):
    done = []
    monkeypatch.setattr(guards, "scrub", lambda: done.append("chip"))
    monkeypatch.setattr(buffers, "randomize", lambda x: done.append(("array", x)))
    monkeypatch.setattr(buffers, "randomize_at", lambda ptr, n: done.append(("at", ptr, n)))
    lt_ws, cublas_ws = object(), object()
    monkeypatch.setattr(judge, "_shared", {"lt": {(1, 2, 3, 4): (None, lt_ws)},
                                           "cublas": SimpleNamespace(workspace=cublas_ws)})
    monkeypatch.setattr(timing, "_hold", (None, SimpleNamespace(ptr=0x7F0000001000), 7))
    judge.scrub_chip()
    # the cuBLAS handle's workspace and the hold's whole pinned block too, not only cuBLASLt's
    assert done == ["chip", ("array", lt_ws), ("array", cublas_ws), ("at", 0x7F0000001000, timing.HOLD_BYTES)]


def test_scrub_chip_before_any_hold_or_baseline(monkeypatch):
    done = []
    monkeypatch.setattr(guards, "scrub", lambda: done.append("chip"))
    monkeypatch.setattr(buffers, "randomize", lambda x: done.append(x))
    monkeypatch.setattr(judge, "_shared", {})
    monkeypatch.setattr(timing, "_hold", None)
    judge.scrub_chip()
    assert done == ["chip"] and timing.hold_block() is None
