"""The dispatcher's eager front door, built and loaded against the installed torch (a CPU build
here: the door's checks need no GPU): host tensors and shapes that do not multiply raise the
library's one-line InputError."""

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    import os

    from cudal2.library import dispatch
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    try:
        if not dispatch._loaded:
            dispatch.build()
        mod = dispatch.load()
        from cudal2.library.arrays import InputError
        mod.clear()
        mod.set_pending([], [], lambda M, N, K: False, InputError)
        yield mod
    finally:
        if old is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = old


def test_host_tensors_raise_the_one_line_input_error(ext):
    from cudal2.library.arrays import InputError
    with pytest.raises(InputError, match="x is in host memory"):
        ext.front(torch.ones(4, 8, dtype=torch.float16), torch.ones(2, 8, dtype=torch.float16))


def test_shapes_that_do_not_multiply_are_named(ext):
    from cudal2.library.arrays import InputError
    with pytest.raises(InputError, match=r"x is \(4, 8\) and W \(2, 7\)"):
        ext.front(torch.ones(4, 8, dtype=torch.float16), torch.ones(2, 7, dtype=torch.float16))


@pytest.fixture
def door(ext):
    """The builtin door with a recording long way; the dispatcher's state put back after."""
    calls = []

    def slow(*args, **kwargs):
        calls.append((args, kwargs))
        return "long way"
    yield ext, calls, slow
    from cudal2.library import layers
    ext.set_door(layers.linear, False)


def test_the_door_takes_the_long_way_until_the_default_library_is_in(door):
    ext, calls, slow = door
    ext.set_door(slow, False)
    x = torch.ones(4, 8, dtype=torch.float16)
    assert ext.linear_door(x, x, bias=None) == "long way" and calls == [((x, x), {"bias": None})]


def test_the_serving_door_is_the_front_door_in_c(door):
    from cudal2.library.arrays import InputError
    ext, calls, slow = door
    ext.set_door(slow, True)
    x, w = torch.ones(4, 8, dtype=torch.float16), torch.ones(2, 8, dtype=torch.float16)
    for kw in ({}, {"bias": None}):
        with pytest.raises(InputError, match="x is in host memory"):
            ext.linear_door(x, w, **kw)
    assert calls == []


def test_the_serving_door_sends_what_is_not_tensors_the_long_way(door):
    ext, calls, slow = door
    ext.set_door(slow, True)
    w = torch.ones(2, 8, dtype=torch.float16)
    assert ext.linear_door("x", w) == "long way" and ext.linear_door(w, w, w, w) == "long way"
    assert len(calls) == 2


def test_clearing_the_table_closes_the_door(door):
    from cudal2.library.arrays import InputError
    ext, calls, slow = door
    ext.set_door(slow, True)
    ext.clear()   # another library takes the dispatcher: the door no longer serves the default one
    assert ext.linear_door(torch.ones(1, 8), torch.ones(1, 8)) == "long way"
    ext.set_pending([], [], lambda M, N, K: False, InputError)


def test_torch_compile_traces_the_door_through_its_polyfill(door, monkeypatch):
    from cudal2.library import layers
    ext, _, _ = door
    layers.door_for(ext)
    # the long way, made runnable on a CPU: the op (whose CPU kernel is at::linear)
    monkeypatch.setattr(layers, "linear", lambda x, W, bias=None: torch.ops.cudal2.linear(x, W, bias))
    x, w = torch.randn(4, 8), torch.randn(3, 8)
    f = torch.compile(lambda x, w: ext.linear_door(x, w), fullgraph=True, backend="eager")
    assert torch.equal(f(x, w), torch.nn.functional.linear(x, w))


def test_the_door_costs_no_dynamo_import_and_is_polyfilled_once_dynamo_loads(ext):
    """Registering the polyfill eagerly imported torch._dynamo inside the first library call (3.7 s
    on the H100 host); it must wait for torch.compile's own import, then be in place."""
    import os
    import subprocess
    import sys
    code = ("import sys, torch\n"
            "from cudal2.library import dispatch, layers\n"
            "ext = dispatch.load()\n"
            "assert layers.door_for(ext) is ext.linear_door\n"
            "assert 'torch._dynamo' not in sys.modules and not layers._POLYFILLED, 'imported too early'\n"
            "import torch._dynamo\n"
            "assert layers._POLYFILLED == [ext], 'not registered after the import'\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
