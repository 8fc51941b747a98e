"""streams.cupy_stream on the CPU, against stand-ins for the two cupy APIs: the stream protocol where
cupy has `Stream.from_external`, `ExternalStream` only where it does not, one object per handle."""

import sys
import types

import pytest

from cudal2.harness import streams


def fake_cupy(protocol: bool):
    made = []

    class Stream:
        pass
    if protocol:
        Stream.from_external = staticmethod(lambda obj: made.append(("protocol", obj.__cuda_stream__())) or object())

    def external(handle):
        made.append(("external", handle))
        return object()
    return types.SimpleNamespace(cuda=types.SimpleNamespace(Stream=Stream, ExternalStream=external)), made


@pytest.mark.parametrize("protocol", [True, False])
def test_one_stream_object_per_handle_through_the_newest_api(monkeypatch, protocol):
    cp, made = fake_cupy(protocol)
    monkeypatch.setitem(sys.modules, "cupy", cp)
    streams.cupy_stream.cache_clear()
    try:
        first = streams.cupy_stream(0x1234)
        assert streams.cupy_stream(0x1234) is first and streams.cupy_stream(0x99) is not first
        assert made == ([("protocol", (0, 0x1234)), ("protocol", (0, 0x99))] if protocol
                        else [("external", 0x1234), ("external", 0x99)])
    finally:
        streams.cupy_stream.cache_clear()
