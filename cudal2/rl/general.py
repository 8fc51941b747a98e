"""Stage general: the non-GEMM task suite, as data.

Guarantees:
- `SUITE` holds 41 tasks at three levels: level 1 is elementwise and casts, level 2 is row
  reductions, softmax, norms, layout and indexing, level 3 is GEMM with epilogues, batched GEMM
  and attention pieces;
- each `GeneralTask` declares its buffers (name, shape over named sizes, dtype), its sizes, an
  input sampler per input, a tolerance rule, and a torch reference (`reference(**inputs)` returns
  the outputs in declaration order);
- `inputs(task, sizes, generator)` samples them (fp16 'normal' never all zeros; 'index' within
  the bound its spec names; 'offset': normal times a per-row scale in [1, 32) plus a per-row
  offset in [-128, 128), so a softmax that shifts by anything but the row max overflows or
  underflows exp on some rows);
- `floor_s(task, sizes, peak_flops, peak_bytes_per_s)` is the time floor: the larger of FLOPs at
  peak and bytes moved (every buffer once) at peak bandwidth;
- `split(task)` puts a task in "heldout" by a hash of its id (one in eight);
- `tail_sizes(task)` is the second size set the judge verifies at (the contract asks for any
  positive sizes): every size odd, drawn afresh between a quarter and about half of the task's,
  so no vector width or tile divides it and no kernel can know it (attn-rope's d stays 2 x half).

Does not: judge. The v2 launch vocabulary for these buffers, the reference kernels and the judge
stages for non-GEMM tasks are not built yet (issue 11); this module is what they will read.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field
from typing import Callable

DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4, "i64": 8}


@dataclass(frozen=True)
class Buffer:
    name: str
    shape: tuple[str, ...]      # size names, e.g. ("rows", "cols")
    dtype: str = "f16"
    sample: str = "normal"      # inputs: normal | uniform | positive | offset | index:<size name>


@dataclass(frozen=True)
class Tolerance:
    """'exact': bitwise equal to the reference computed in the output's dtype. 'relative': the
    error against a float64 reference at most `factor` x the error of torch's own result in the
    task's dtypes (with a floor of 2^-14 relative, so an exact torch result does not demand
    perfection)."""
    kind: str = "relative"
    factor: float = 2.0


@dataclass(frozen=True)
class GeneralTask:
    id: str
    level: int
    inputs: tuple[Buffer, ...]
    outputs: tuple[Buffer, ...]
    sizes: dict = field(hash=False)
    reference: Callable = field(hash=False, compare=False)
    flops: Callable = field(hash=False, compare=False, default=lambda s: 0)
    tolerance: Tolerance = Tolerance()


def _numel(b: Buffer, sizes: dict) -> int:
    return math.prod(sizes[d] for d in b.shape)


def bytes_moved(t: GeneralTask, sizes: dict | None = None) -> int:
    s = sizes or t.sizes
    return sum(_numel(b, s) * DTYPE_BYTES[b.dtype] for b in t.inputs + t.outputs)


def floor_s(t: GeneralTask, peak_flops: float, peak_bytes_per_s: float, sizes: dict | None = None) -> float:
    s = sizes or t.sizes
    return max(t.flops(s) / peak_flops, bytes_moved(t, s) / peak_bytes_per_s)


def split(t: GeneralTask) -> str:
    return "heldout" if int(hashlib.sha256(t.id.encode()).hexdigest()[:8], 16) % 8 == 0 else "train"


def tail_sizes(t: GeneralTask, rng: random.Random | None = None) -> dict:
    """Odd sizes drawn afresh (a system random source by default) between a quarter and about half
    of the task's: a fixed second set could be special-cased like the first (review 38)."""
    rng = rng or random.SystemRandom()
    s = {}
    for k, v in t.sizes.items():
        r = rng.randint(max(1, v // 4), v // 2 + 3) | 1
        s[k] = r - 2 if r >= v else r   # stays odd and below the task's size
    if "half" in s:
        s["d"] = 2 * s["half"]
    return s


def inputs(t: GeneralTask, sizes: dict | None = None, generator=None, device: str = "cpu") -> dict:
    import torch
    s = sizes or t.sizes
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "i32": torch.int32, "i64": torch.int64}
    out = {}
    for b in t.inputs:
        shape = tuple(s[d] for d in b.shape)
        if b.sample.startswith("index:"):
            out[b.name] = torch.randint(0, s[b.sample.split(":")[1]], shape, generator=generator, device=device,
                                        dtype=dt[b.dtype])
            continue
        x = torch.randn(shape, generator=generator, device=device, dtype=torch.float32)
        if b.sample == "uniform":
            x = torch.rand(shape, generator=generator, device=device)
        elif b.sample == "offset":
            # per row: a scale in [1, 32) and an offset in [-128, 128); the scale spreads a row wide
            # enough that only its max (not its first element, not its mean) keeps exp finite
            # (review 38: with the offset alone, a shift by x[row, 0] passed)
            row = shape[:-1] + (1,)
            scale = 1 + 31 * torch.rand(row, generator=generator, device=device)
            x = x * scale + (torch.rand(row, generator=generator, device=device) * 256 - 128)
        elif b.sample == "positive":
            x = 0.5 + 0.5 * torch.rand(shape, generator=generator, device=device)
        out[b.name] = x.to(dt[b.dtype])
    return out


# --- the suite ------------------------------------------------------------------------------
def _wraps(ref, inner):
    """`ref` with the function the suite wrote (what `reference_text` shows a model)."""
    ref.__wrapped__ = inner
    return ref


def reference_text(t: GeneralTask) -> str:
    """The source line(s) that define the task's computation."""
    import inspect
    return inspect.getsource(getattr(t.reference, "__wrapped__", t.reference)).strip()


def _ew(name: str, fn, level: int = 1, n_in: int = 1, flops_per: int = 1, **kw) -> GeneralTask:
    ins = tuple(Buffer(c, ("rows", "cols")) for c in "xyz"[:n_in])
    return GeneralTask(f"ew-{name}", level, ins, (Buffer("out", ("rows", "cols")),), {"rows": 4096, "cols": 4096},
                       _wraps(lambda **a: (fn(*[a[b.name] for b in ins]),), fn),
                       lambda s: flops_per * s["rows"] * s["cols"], **kw)


def _torch():
    import torch
    return torch


def _F():
    return _torch().nn.functional


ROW = {"rows": 8192, "cols": 4096}


def _row(name: str, fn, out_shape=("rows",), out_dtype="f16", level: int = 2, sample="normal", tol=Tolerance(),
         sizes=None) -> GeneralTask:
    return GeneralTask(f"row-{name}", level, (Buffer("x", ("rows", "cols"), sample=sample),),
                       (Buffer("out", out_shape, out_dtype),), dict(sizes or ROW), _wraps(lambda x: (fn(x),), fn),
                       lambda s: 2 * s["rows"] * s["cols"], tol)


def _gemm(name: str, epilogue, out_dtype: str = "f16", bias: bool = False) -> GeneralTask:
    ins = (Buffer("a", ("M", "K")), Buffer("b", ("N", "K"))) + ((Buffer("bias", ("N",)),) if bias else ())

    def ref(a, b, bias=None):
        acc = a.float() @ b.float().T
        if bias is not None:
            acc = acc + bias.float()
        acc = epilogue(acc)
        return (acc.to(_torch().float32 if out_dtype == "f32" else _torch().float16),)
    return GeneralTask(f"gemm-{name}", 3, ins, (Buffer("c", ("M", "N"), out_dtype),), {"M": 2048, "N": 2048, "K": 2048},
                       ref, lambda s: 2 * s["M"] * s["N"] * s["K"])


def _suite() -> list[GeneralTask]:
    t = _torch
    F = _F
    exact = Tolerance("exact")
    tasks = [
        _ew("relu", lambda x: F().relu(x)),
        _ew("gelu", lambda x: F().gelu(x.float()).half(), flops_per=8),
        _ew("gelu-tanh", lambda x: F().gelu(x.float(), approximate="tanh").half(), flops_per=10),
        _ew("silu", lambda x: F().silu(x.float()).half(), flops_per=4),
        _ew("sigmoid", lambda x: t().sigmoid(x.float()).half(), flops_per=4),
        _ew("tanh", lambda x: t().tanh(x.float()).half(), flops_per=4),
        _ew("exp", lambda x: t().exp(x.float().clamp(max=10)).half(), flops_per=2),
        _ew("square", lambda x: (x.float() * x.float()).half()),
        _ew("relu-squared", lambda x: F().relu(x.float()).square().half(), flops_per=2),
        _ew("leaky-relu", lambda x: F().leaky_relu(x.float(), 0.01).half(), flops_per=2),
        _ew("add", lambda x, y: (x.float() + y.float()).half(), n_in=2),
        _ew("mul", lambda x, y: (x.float() * y.float()).half(), n_in=2),
        _ew("silu-mul", lambda x, y: (F().silu(x.float()) * y.float()).half(), n_in=2, flops_per=5),
        _ew("gelu-mul", lambda x, y: (F().gelu(x.float(), approximate="tanh") * y.float()).half(), n_in=2, flops_per=11),
        _ew("add-add", lambda x, y, z: (x.float() + y.float() + z.float()).half(), n_in=3, flops_per=2),
        GeneralTask("ew-bias-residual", 1, (Buffer("x", ("rows", "cols")), Buffer("bias", ("cols",)),
                                            Buffer("res", ("rows", "cols"))), (Buffer("out", ("rows", "cols")),),
                    {"rows": 4096, "cols": 4096}, lambda x, bias, res: ((x.float() + bias.float() + res.float()).half(),),
                    lambda s: 2 * s["rows"] * s["cols"]),
        GeneralTask("cast-f16-f32", 1, (Buffer("x", ("n",)),), (Buffer("out", ("n",), "f32"),), {"n": 1 << 24},
                    lambda x: (x.float(),), tolerance=exact),
        GeneralTask("cast-f32-f16", 1, (Buffer("x", ("n",), "f32"),), (Buffer("out", ("n",), "f16"),), {"n": 1 << 24},
                    lambda x: (x.half(),), tolerance=exact),
        GeneralTask("cast-f16-bf16", 1, (Buffer("x", ("n",)),), (Buffer("out", ("n",), "bf16"),), {"n": 1 << 24},
                    lambda x: (x.float().to(t().bfloat16),), tolerance=exact),
        # level 2: rows
        _row("sum", lambda x: x.float().sum(-1).half()),
        _row("max", lambda x: x.amax(-1), tol=exact),
        _row("min", lambda x: x.amin(-1), tol=exact),
        _row("mean", lambda x: x.float().mean(-1).half()),
        _row("sumsq", lambda x: x.float().square().sum(-1).half()),
        _row("argmax", lambda x: x.float().argmax(-1).to(t().int32), out_dtype="i32", tol=exact),
        # 'offset' inputs: a softmax must subtract the row max (standard normal rows never need it)
        _row("softmax", lambda x: t().softmax(x.float(), -1).half(), out_shape=("rows", "cols"), sample="offset"),
        _row("online-softmax", lambda x: t().softmax(x.float(), -1).half(), out_shape=("rows", "cols"),
             sizes={"rows": 64, "cols": 1 << 18}, sample="offset"),
        _row("log-softmax", lambda x: t().log_softmax(x.float(), -1).half(), out_shape=("rows", "cols"),
             sample="offset"),
        _row("l2-normalize", lambda x: F().normalize(x.float(), dim=-1).half(), out_shape=("rows", "cols")),
        _row("cumsum", lambda x: x.float().cumsum(-1).half(), out_shape=("rows", "cols"), sample="positive"),
        GeneralTask("norm-layernorm", 2, (Buffer("x", ("rows", "cols")), Buffer("w", ("cols",)), Buffer("b", ("cols",))),
                    (Buffer("out", ("rows", "cols")),), dict(ROW),
                    lambda x, w, b: (F().layer_norm(x.float(), (x.shape[-1],), w.float(), b.float(), 1e-5).half(),),
                    lambda s: 8 * s["rows"] * s["cols"]),
        GeneralTask("norm-rmsnorm", 2, (Buffer("x", ("rows", "cols")), Buffer("w", ("cols",))),
                    (Buffer("out", ("rows", "cols")),), dict(ROW),
                    lambda x, w: ((x.float() * t().rsqrt(x.float().square().mean(-1, keepdim=True) + 1e-6)
                                   * w.float()).half(),), lambda s: 4 * s["rows"] * s["cols"]),
        GeneralTask("layout-transpose", 2, (Buffer("x", ("rows", "cols")),), (Buffer("out", ("cols", "rows")),), dict(ROW),
                    lambda x: (x.t().contiguous(),), tolerance=exact),
        GeneralTask("layout-permute-0213", 2, (Buffer("x", ("b", "s", "h", "d")),), (Buffer("out", ("b", "h", "s", "d")),),
                    {"b": 8, "s": 1024, "h": 32, "d": 128}, lambda x: (x.permute(0, 2, 1, 3).contiguous(),),
                    tolerance=exact),
        GeneralTask("index-gather-rows", 2, (Buffer("table", ("vocab", "dim")), Buffer("idx", ("n",), "i64", "index:vocab")),
                    (Buffer("out", ("n", "dim")),), {"vocab": 32000, "dim": 4096, "n": 8192},
                    lambda table, idx: (table[idx],), tolerance=exact),
        # level 3
        _gemm("bias", lambda acc: acc, bias=True),
        _gemm("bias-relu", lambda acc: F().relu(acc), bias=True),
        _gemm("f32-out", lambda acc: acc, out_dtype="f32"),
        GeneralTask("gemm-batched", 3, (Buffer("a", ("batch", "M", "K")), Buffer("b", ("batch", "N", "K"))),
                    (Buffer("c", ("batch", "M", "N")),), {"batch": 32, "M": 512, "N": 512, "K": 512},
                    lambda a, b: ((a.float() @ b.float().transpose(-1, -2)).half(),),
                    lambda s: 2 * s["batch"] * s["M"] * s["N"] * s["K"]),
        GeneralTask("attn-scores", 3, (Buffer("q", ("bh", "s", "d")), Buffer("k", ("bh", "s", "d"))),
                    (Buffer("scores", ("bh", "s", "s"), "f32"),), {"bh": 32, "s": 1024, "d": 128},
                    lambda q, k: ((q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1]),),
                    lambda s: 2 * s["bh"] * s["s"] * s["s"] * s["d"]),
        GeneralTask("attn-causal", 3, (Buffer("q", ("bh", "s", "d")), Buffer("k", ("bh", "s", "d")),
                                       Buffer("v", ("bh", "s", "d"))), (Buffer("out", ("bh", "s", "d")),),
                    {"bh": 32, "s": 1024, "d": 128},
                    lambda q, k, v: (F().scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                                      is_causal=True).half(),),
                    lambda s: 2 * s["bh"] * s["s"] * s["s"] * s["d"]),
        GeneralTask("attn-rope", 3, (Buffer("x", ("s", "h", "d")), Buffer("cos", ("s", "half"), "f32"),
                                     Buffer("sin", ("s", "half"), "f32")), (Buffer("out", ("s", "h", "d")),),
                    {"s": 4096, "h": 32, "d": 128, "half": 64}, _rope, lambda s: 6 * s["s"] * s["h"] * s["d"]),
    ]
    return tasks


def _rope(x, cos, sin):
    """Rotary embedding on pairs (first half, second half) of the head dimension."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h].float(), x[..., h:].float()
    c, s = cos[:, None, :], sin[:, None, :]
    return (_torch().cat([x1 * c - x2 * s, x1 * s + x2 * c], -1).half(),)


SUITE: list[GeneralTask] = _suite()
BY_ID: dict[str, GeneralTask] = {t.id: t for t in SUITE}


def vocab(task_id: str):
    """The launch vocabulary of a task: its buffers and its size names (`harness.launch.Vocab`)."""
    from cudal2.harness.launch import SpecError, Vocab
    t = BY_ID.get(task_id)
    if t is None:
        raise SpecError(f"no task {task_id!r} in the general suite")
    return Vocab(scalars=tuple(t.sizes), buffers=tuple(b.name for b in t.inputs + t.outputs))
