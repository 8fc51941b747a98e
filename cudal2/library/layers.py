"""The library where models use it: `linear` (torch, any leading dimensions) and `patch`/`unpatch`,
which route a model's fp16 `torch.nn.Linear` layers through the library.

Guarantees:
- `linear(x, W, bias)` equals `torch.nn.functional.linear(x, W, bias)` for fp16 CUDA tensors: x of
  shape (..., K) (its rows are made dense when they are not), W of (N, K), bias of (N,) or None;
  the call is one call into the compiled dispatcher (`cudal2 library build`; the op
  `torch.ops.cudal2.linear` under torch.compile) or, without it, `torch.ops.cudal2.hgemm` (Python
  dispatch): `torch.compile` traces either and CUDA graphs capture either; wrong inputs raise the
  library's one-line `InputError`;
- `cudal2.linear` is, where the dispatcher is built, its builtin `linear_door` (`public_linear`):
  the same function with no Python frame per eager call, `linear` until the default library is
  in the dispatcher, and `linear` again wherever torch.compile traces it (its polyfill);
- `patch(model)` returns how many layers it routed: every `nn.Linear` whose weight is fp16 and
  whose (out, in) features the library serves at some M (on a machine without a library, every
  fp16 layer: they keep their own forward for host inputs anyway); the others stay untouched, so
  patching never adds a cost where no library kernel can run. A
  patched layer sends fp16 CUDA inputs through `linear` when no gradient is wanted (inference:
  `torch.no_grad()` or `torch.inference_mode()`; once the default library is in the dispatcher,
  straight into its door, which is `linear` in one builtin call, so a call the vendor serves costs
  no more host time than the plain layer's), and anything else (a CPU input, another dtype,
  training) to its own forward, unchanged; `unpatch(model)` restores every layer and returns how many.

Does not: change weights, cast, or move anything between devices.
"""

from __future__ import annotations

from cudal2.library.arrays import InputError

_MARK = "_cudal2_patched"


def _validate(x, W, bias) -> None:
    """Raise the one-line error for inputs `linear` does not compute."""
    import torch
    if not isinstance(x, torch.Tensor) or not isinstance(W, torch.Tensor):
        raise TypeError(f"cudal2.linear takes torch tensors, got {type(x).__name__} and {type(W).__name__}")
    if W.dim() != 2 or x.dim() < 1 or x.shape[-1] != W.shape[1]:
        raise InputError(f"cudal2.linear: x is {tuple(x.shape)} and W {tuple(W.shape)}; want x (..., K) and W (N, K)")
    if bias is not None and tuple(bias.shape) != (W.shape[0],):
        raise InputError(f"cudal2.linear: bias is {tuple(bias.shape)}; want ({W.shape[0]},)")
    for name, t in (("x", x), ("W", W)):
        if not t.is_cuda:
            raise InputError(f"cudal2: {name} is in host memory; cudal2 computes on CUDA arrays (move it to the GPU)")
        if t.dtype != torch.float16:
            raise InputError(f"cudal2: {name} is {t.dtype}; cudal2 computes fp16 GEMMs (cast it, e.g. .half())")


def linear(x, W, bias=None):
    """F.linear(x, W, bias) through the default library. Once the default library is in the
    compiled dispatcher, an eager call whose W has an (N, K) the library serves at no M is
    F.linear itself (after the same checks, counted as a `no_entry` fallback): a hop through the
    C++ front door to reach the same cuBLAS call cost about 1-1.6 us of host time per call on the
    H100 host, 10% of a host-bound call; any other eager call is that dispatcher's `front`
    (checks, lookup, launch or F.linear's kernel, all in C++); while torch.compile traces, the op."""
    front = _FRONT[0]
    if front is not None:
        try:
            s = W.shape
            if (bias is None and s not in _FRONT[2] and len(s) == 2 and x.dtype is _FRONT[3]
                    and W.dtype is _FRONT[3] and x.is_cuda and W.is_cuda and x.shape[-1] == s[1]):
                _FRONT[4][0] += 1
                return _FRONT[5](x, W)   # F.linear: traceable as it is, so no is_compiling check here
        except (AttributeError, IndexError):
            pass   # not tensors, or a 0-d x: the long way below says so in one line
        if not _FRONT[1]():   # (while torch.compile traces, the long way: the op)
            try:
                return front(x, W, bias)
            except TypeError:
                pass   # not tensors: the long way below says so in one line
    from cudal2 import library
    _validate(x, W, bias)
    if not x.is_contiguous():
        x = x.contiguous()
    lib = library._default or library.default()
    y = lib.linear(x, W, bias)
    import torch
    if lib._ext is not None and lib is library._default and not torch.compiler.is_compiling():
        # The default library is in the dispatcher: later eager calls go straight there, or to F.linear.
        _FRONT[:] = [lib._ext.front, torch.compiler.is_compiling,
                     frozenset((e.N, e.K) for e in lib.served), torch.float16, lib._short_vendor,
                     torch.nn.functional.linear, torch.is_grad_enabled, lib._ext.linear_door]
        lib._ext.set_door(linear, True)   # and `cudal2.linear`, the door, is now the whole call
    return y


def forget_front(ext=None) -> None:
    """Disarm `linear`'s short way and close the dispatcher's door (`ext`): the next call takes the
    long way, which installs the default library again (as after another library took the dispatcher)."""
    _FRONT[:] = [None] * 8
    if ext is not None:
        ext.set_door(linear, False)


def public_linear():
    """What `cudal2.linear` is: the compiled dispatcher's `linear_door` when the dispatcher is built
    and torch sees a GPU (a builtin: an eager call pays no Python frame and no argument casting,
    and until the default library is in the dispatcher it is `linear` itself), registered as
    torch.compile's polyfill target so that traces go through `linear`; else `linear`."""
    try:
        import torch

        from cudal2.library import dispatch
        ext = dispatch.load() if torch.cuda.is_available() else None
    except ImportError:
        return linear
    return linear if ext is None else door_for(ext)


def door_for(ext):
    """Hook the dispatcher's door to `linear` (the long way) and to torch.compile; idempotent. The
    polyfill is registered once torch.compile's machinery (torch._dynamo) is imported, not before:
    importing it took 3.7 s of a first library call on the H100 host, against a budget of 50 ms."""
    ext.set_door(linear, _FRONT[0] is not None)
    _after_import("torch._dynamo", lambda: _polyfill(ext))
    return ext.linear_door


def _polyfill(ext) -> None:
    if not _POLYFILLED:
        import torch
        torch.compiler.substitute_in_graph(ext.linear_door, skip_signature_check=True)(_traced_linear)
        _POLYFILLED.append(ext)


def _after_import(name: str, then) -> None:
    """Run `then()` now if module `name` is imported, else once its import ends."""
    import sys
    if name in sys.modules:
        then()
    elif not any(isinstance(f, _AfterImport) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(name, then))


class _AfterImport:
    """A one-shot import finder: for module `name` it leaves sys.meta_path, finds the module's
    spec the usual way and wraps its loader so that `then()` runs right after the module executed
    (a failure of `then` is a warning: it never breaks the import that triggered it)."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        import importlib.util
        import sys
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            run, then = spec.loader.exec_module, self.then

            def exec_then(module):
                run(module)
                try:
                    then()
                except Exception as err:  # noqa: BLE001
                    import warnings
                    warnings.warn(f"cudal2: after importing {fullname}: {err}", stacklevel=2)
            spec.loader.exec_module = exec_then
        return spec


def _traced_linear(x, W, bias=None):
    """`linear_door` as torch.compile traces it: the long way (the op while compiling)."""
    return linear(x, W, bias)


_POLYFILLED: list = []


# The short way, once the default library is in the dispatcher: its front door,
# torch.compiler.is_compiling, the served (N, K), torch.float16, the library's counter of calls
# sent straight to F.linear, F.linear, torch.is_grad_enabled and the dispatcher's door (one list:
# a single global lookup per call).
_FRONT: list = [None] * 8


def python_linear(lib, x, W, bias=None):
    """`linear` without the compiled dispatcher: rows through `torch.ops.cudal2.hgemm` (a Python
    custom op over `lib.matmul`'s Python dispatch), then the bias."""
    import torch

    import cudal2.library.torch_op  # noqa: F401  (registers torch.ops.cudal2.hgemm)
    K, N = W.shape[1], W.shape[0]
    rows = x.reshape(-1, K)
    y = x.new_empty((0, N)) if rows.shape[0] == 0 else torch.ops.cudal2.hgemm(rows, W)
    if bias is not None:
        y = y + bias
    return y.reshape(*x.shape[:-1], N)


def _forward(self, x):
    door = _FRONT[7]
    if door is not None and not _FRONT[6]():
        # Inference with the default library in the dispatcher: straight into its door, a builtin
        # (torch.compile traces it as `linear`, its polyfill), one call as Linear.forward's F.linear
        # is. Through `linear` (two Python frames, torch.compiler.is_compiling, the pybind front) a
        # layer the dispatcher sent to the vendor cost 3.5-4.5 us more host time than the plain
        # layer, and a Qwen2.5-7B block at M=128 (one layer of five on a kernel of ours) read
        # 0.92-0.96 eager and 0.90-0.98 flushed (2026-11-25, eval/overhead.py, eval/decoder_layer.py).
        try:
            return door(x, self.weight, self.bias)
        except (TypeError, InputError):   # not an fp16 CUDA tensor: the layer's own forward
            return type(self).forward(self, x)
    import torch
    if (isinstance(x, torch.Tensor) and x.is_cuda and x.dtype is torch.float16 and self.weight.is_cuda
            and not (torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad))):
        return linear(x, self.weight, self.bias)
    return type(self).forward(self, x)


def _served_nk():
    """(N, K) of the default library's served entries; None when no library loads here (no GPU)."""
    from cudal2 import library
    try:
        lib = library._default or library.default()
    except library.LibraryError:
        return None
    return {(e.N, e.K) for e in lib.served}


def patch(model) -> int:
    import torch
    nk = _served_nk()
    n = 0
    for m in model.modules():
        if (isinstance(m, torch.nn.Linear) and m.weight.dtype == torch.float16 and _MARK not in m.__dict__
                and (nk is None or tuple(m.weight.shape) in nk)):   # a layer nothing serves costs nothing
            m.forward = _forward.__get__(m)
            setattr(m, _MARK, True)
            n += 1
    return n


def unpatch(model) -> int:
    n = 0
    for m in model.modules():
        if _MARK in m.__dict__:
            del m.forward
            delattr(m, _MARK)
            n += 1
    return n
