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
