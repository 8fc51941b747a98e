"""The v2 launch spec: what a device-only candidate declares, and its resolution for one shape.

Guarantees:
- `parse(source)` reads the one `/* cudal2-launch {json} */` block of a source and returns a
  validated `LaunchSpec`, or raises `SpecError` with a one-line reason fit to show a model;
  `None` when the source has no such block (a v1 file);
- a spec speaks a `Vocab`: the GEMM's (buffers A, B, C; sizes M, N, K; tensor maps), or, when it
  names a `"task"` of the general suite, that task's buffers and size names (no tensor maps);
- expressions are integer arithmetic over the vocabulary's sizes only (literals, + - * // %,
  parentheses, cdiv, min, max); they are evaluated by walking a whitelisted AST, never by `eval`;
- `LaunchSpec.resolve(M, N, K)` (GEMM) or `resolve_sizes(sizes)` (any vocabulary) gives concrete
  launches (grid, block, cluster, smem, args) or raises `SpecError` when a value is out of range
  for that shape (grid not positive, grid not
  a multiple of the cluster, block over 1024 threads, a workspace slice outside the workspace);
- the spec round-trips through `to_dict`/`from_dict` (JSON-safe: it travels to workers and into
  the library's manifest).

Does not: load or launch anything (see `module.py`), or check the kernels' C++ signatures
(the loader compares parameter sizes with the cubin).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

MAX_KERNELS = 8
MAX_THREADS = 1024
MAX_CLUSTER = 8
# The most dynamic shared memory a block can opt into on the largest target (sm90: 227 KiB). More is
# no kernel's: the driver would refuse it at launch, and past 2^32 bytes ctypes truncated it to a
# small launch size without a word (reviews 41 and 43).
MAX_SMEM = 227 * 1024
SWIZZLES = (0, 32, 64, 128)
SCALARS = ("M", "N", "K")
MATRICES = ("A", "B", "C")


@dataclass(frozen=True)
class Vocab:
    """What a spec's arguments and expressions may name."""
    scalars: tuple[str, ...]
    buffers: tuple[str, ...]
    tmaps: bool = False


GEMM = Vocab(SCALARS, MATRICES, tmaps=True)


def vocab_for(task: str | None) -> Vocab:
    """The GEMM's vocabulary, or a general task's (`SpecError` for a task that does not exist)."""
    if task is None:
        return GEMM
    from cudal2.rl.general import vocab   # the suite is data; only task files need it
    return vocab(task)


class SpecError(ValueError):
    """The launch spec is missing, malformed or out of range; the message is one line."""


# ---- expressions -----------------------------------------------------------------------------
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}
_FUNCS = {"cdiv": (2, 2, lambda a, b: -(-a // b)), "min": (2, 8, min), "max": (2, 8, max)}
_MAX_VALUE = 1 << 62


def check_expr(text: str | int, names: tuple[str, ...] = SCALARS) -> None:
    """Raise SpecError unless `text` is an allowed expression (or an int) over `names`."""
    evaluate(text, {n: 8 for n in names}, checking=True)


def evaluate(text: str | int, env: dict[str, int], checking: bool = False) -> int:
    if isinstance(text, bool):
        raise SpecError(f"{text!r} is not an integer expression")
    if isinstance(text, int):
        return text
    if not isinstance(text, str) or len(text) > 200:
        raise SpecError(f"{text!r} is not an integer expression (a string of at most 200 characters)")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise SpecError(f"cannot parse expression {text!r}") from None

    def walk(n: ast.AST) -> int:
        if isinstance(n, ast.Expression):
            return walk(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
            return n.value
        if isinstance(n, ast.Name) and n.id in env:
            return env[n.id]
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -walk(n.operand)
        if isinstance(n, ast.BinOp) and type(n.op) in _BINOPS:
            a, b = walk(n.left), walk(n.right)
            if isinstance(n.op, (ast.FloorDiv, ast.Mod)) and b == 0:
                if checking:
                    return 1
                raise SpecError(f"division by zero in {text!r}")
            v = _BINOPS[type(n.op)](a, b)
            if abs(v) > _MAX_VALUE:
                raise SpecError(f"{text!r} overflows")
            return v
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _FUNCS and not n.keywords):
            lo, hi, fn = _FUNCS[n.func.id]
            if not lo <= len(n.args) <= hi:
                raise SpecError(f"{n.func.id}() takes {lo} to {hi} arguments in {text!r}")
            args = [walk(a) for a in n.args]
            if n.func.id == "cdiv" and args[1] == 0:
                if checking:
                    return 1
                raise SpecError(f"division by zero in {text!r}")
            return fn(*args)
        raise SpecError(f"{text!r}: only integers, the sizes {', '.join(env)}, + - * // %, parentheses, cdiv, min and "
                        "max are allowed")

    return walk(tree)


# ---- the spec --------------------------------------------------------------------------------
Expr = int | str


@dataclass
class KernelLaunch:
    name: str
    grid: list[Expr]
    block: list[Expr]
    args: list[Any]
    cluster: list[Expr] = field(default_factory=lambda: [1, 1, 1])
    smem: Expr = 0


@dataclass
class LaunchSpec:
    kernels: list[KernelLaunch]
    workspace: Expr = 0
    m_tiles: list[int] = field(default_factory=lambda: [128])
    task: str | None = None     # a general task's id; None: the GEMM

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> "LaunchSpec":
        return _validate(d)

    @property
    def vocab(self) -> Vocab:
        return vocab_for(self.task)

    def workspace_bytes(self, M: int, N: int, K: int) -> int:
        return self.workspace_for({"M": M, "N": N, "K": K})

    def workspace_for(self, sizes: dict[str, int]) -> int:
        n = evaluate(self.workspace, sizes)
        if n < 0:
            raise SpecError(f"workspace {self.workspace!r} is negative for {_shape(sizes)}")
        return n

    def resolve(self, M: int, N: int, K: int) -> list["Resolved"]:
        return self.resolve_sizes({"M": M, "N": N, "K": K})

    def resolve_sizes(self, env: dict[str, int]) -> list["Resolved"]:
        ws = self.workspace_for(env)
        shape = _shape(env)
        out = []
        for k in self.kernels:
            dims = {}
            for what in ("grid", "block", "cluster"):
                v = [evaluate(x, env) for x in getattr(k, what)]
                v = v + [1] * (3 - len(v))
                if any(x <= 0 for x in v):
                    raise SpecError(f"kernel {k.name}: {what} {v} is not positive for {shape}")
                dims[what] = tuple(v)
            g, b, c = dims["grid"], dims["block"], dims["cluster"]
            if b[0] * b[1] * b[2] > MAX_THREADS:
                raise SpecError(f"kernel {k.name}: block {b} has more than {MAX_THREADS} threads")
            if c[0] * c[1] * c[2] > MAX_CLUSTER:
                raise SpecError(f"kernel {k.name}: cluster {c} has more than {MAX_CLUSTER} CTAs")
            if any(gi % ci for gi, ci in zip(g, c)):
                raise SpecError(f"kernel {k.name}: grid {g} is not a multiple of cluster {c} for {shape}")
            if g[0] >= 1 << 31 or g[1] >= 1 << 16 or g[2] >= 1 << 16:
                raise SpecError(f"kernel {k.name}: grid {g} exceeds the hardware limits")
            smem = evaluate(k.smem, env)
            if not 0 <= smem <= MAX_SMEM:
                raise SpecError(f"kernel {k.name}: smem {smem} is outside 0..{MAX_SMEM} bytes for {shape}")
            args = []
            for a in k.args:
                if isinstance(a, str):
                    args.append((a, None))
                elif "int" in a:
                    v = evaluate(a["int"], env)
                    if not -(1 << 31) <= v < 1 << 31:
                        raise SpecError(f"kernel {k.name}: int {a['int']!r} = {v} does not fit in 32 bits")
                    args.append(("int", v))
                elif "ws" in a:
                    off = evaluate(a["ws"], env)
                    if off < 0 or off % 16 or (off >= ws and not (off == 0 and ws == 0)):
                        raise SpecError(f"kernel {k.name}: workspace offset {a['ws']!r} = {off} is not a 16-byte "
                                        f"aligned offset inside the {ws}-byte workspace")
                    args.append(("ws", off))
                else:
                    args.append(("tmap", (a["tmap"], tuple(a["box"]), a["swizzle"])))
            out.append(Resolved(k.name, g, b, c, smem, args))
        return out


def _shape(sizes: dict[str, int]) -> str:
    if set(sizes) == set(SCALARS):
        return f"{sizes['M']}x{sizes['N']}x{sizes['K']}"
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


@dataclass(frozen=True)
class Resolved:
    """One launch of one call at one shape. `args` are (kind, value): kind a buffer or size name of
    the vocabulary (value None), or int, ws, tmap."""
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cluster: tuple[int, int, int]
    smem: int
    args: list


_OPEN = re.compile(r"/\*\s*cudal2-launch\b")


def blocks(source: str) -> list[str]:
    r"""The body of each `/* cudal2-launch ... */` block in linear time: what the regex
    /\*\s*cudal2-launch\b(.*?)\*/ (re.S) finds. The regex rescanned to the end of the source from
    every unclosed opening (`/* cudal2-launch ` 7,500 times, 128,000 characters: 8.8 s, quadratic;
    review 40). An opening with no `*/` after it ends the search: no later one has one either."""
    out, i = [], 0
    while (start := source.find("/*", i)) >= 0:
        if not (m := _OPEN.match(source, start)):
            i = start + 1
            continue
        end = source.find("*/", m.end())
        if end < 0:
            break
        out.append(source[m.end():end])
        i = end + 2
    return out


def parse(source: str) -> LaunchSpec | None:
    found = blocks(source)
    if not found:
        return None
    if len(found) > 1:
        raise SpecError(f"{len(found)} cudal2-launch blocks: a file has exactly one")
    try:
        return _validate(json.loads(found[0]))
    except json.JSONDecodeError as e:
        raise SpecError(f"the cudal2-launch block is not valid JSON: {e}") from None
    except SpecError:
        raise
    except (RecursionError, ValueError) as e:
        # the json module raises these for input it reads as valid JSON it cannot hold (lists nested
        # past the recursion limit, an integer over Python's 4300-digit limit): still the candidate's
        # spec, not the harness's failure, and never an exception out of a build or a reward
        raise SpecError(f"the cudal2-launch block cannot be read ({type(e).__name__}: nested too deep or a "
                        "number too long)") from None


def _dims(kname: str, what: str, v: Any, vocab: Vocab) -> list[Expr]:
    if not isinstance(v, list) or not 1 <= len(v) <= 3:
        raise SpecError(f"kernel {kname}: {what} must be a list of 1 to 3 integers or expressions")
    for x in v:
        check_expr(x, vocab.scalars)
    return list(v)


def _arg(kname: str, a: Any, vocab: Vocab) -> Any:
    if isinstance(a, str):
        if a in vocab.buffers or a in vocab.scalars:
            return a
        raise SpecError(f"kernel {kname}: unknown argument {a!r} (want one of "
                        f"{', '.join(vocab.buffers + vocab.scalars)}, or an object)")
    if not isinstance(a, dict) or len(a) == 0:
        raise SpecError(f"kernel {kname}: argument {a!r} is not a string or an object")
    if set(a) == {"int"} or set(a) == {"ws"}:
        check_expr(next(iter(a.values())), vocab.scalars)
        return dict(a)
    if "tmap" in a and not vocab.tmaps:
        raise SpecError(f"kernel {kname}: tensor maps are for the GEMM only")
    if "tmap" in a:
        if set(a) - {"tmap", "box", "swizzle"}:
            raise SpecError(f"kernel {kname}: tmap argument has unknown keys {sorted(set(a) - {'tmap', 'box', 'swizzle'})}")
        if a["tmap"] not in MATRICES:
            raise SpecError(f"kernel {kname}: tmap must name A, B or C, got {a['tmap']!r}")
        box, sw = a.get("box"), a.get("swizzle", 0)
        if (not isinstance(box, list) or len(box) != 2 or not all(isinstance(x, int) and not isinstance(x, bool)
                                                                 and 1 <= x <= 256 for x in box)):
            raise SpecError(f"kernel {kname}: tmap box must be [inner, outer], integers 1..256, got {box!r}")
        if sw not in SWIZZLES:
            raise SpecError(f"kernel {kname}: tmap swizzle must be one of {SWIZZLES}, got {sw!r}")
        if (box[0] * 2) % 16:
            raise SpecError(f"kernel {kname}: tmap box inner {box[0]} x 2 bytes is not a multiple of 16")
        if sw and box[0] * 2 > sw:
            raise SpecError(f"kernel {kname}: tmap box inner {box[0]} x 2 bytes exceeds the {sw}-byte swizzle span")
        return {"tmap": a["tmap"], "box": list(box), "swizzle": sw}
    raise SpecError(f"kernel {kname}: argument {a!r} is not one of int, ws, tmap")


def _validate(d: Any) -> LaunchSpec:
    if not isinstance(d, dict):
        raise SpecError("the cudal2-launch block must hold a JSON object")
    unknown = set(d) - {"kernels", "workspace", "m_tiles", "task"}
    if unknown:
        raise SpecError(f"unknown key(s) in the launch spec: {', '.join(sorted(unknown))}")
    task = d.get("task")
    if task is not None and not isinstance(task, str):
        raise SpecError("'task' must name a task of the general suite")
    vocab = vocab_for(task)
    ks = d.get("kernels")
    if not isinstance(ks, list) or not 1 <= len(ks) <= MAX_KERNELS:
        raise SpecError(f"'kernels' must be a list of 1 to {MAX_KERNELS} launches")
    kernels = []
    for i, k in enumerate(ks):
        if not isinstance(k, dict):
            raise SpecError(f"kernels[{i}] is not an object")
        unknown = set(k) - {"name", "grid", "block", "cluster", "smem", "args"}
        if unknown:
            raise SpecError(f"kernels[{i}]: unknown key(s) {', '.join(sorted(unknown))}")
        name = k.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w{0,200}", name):
            raise SpecError(f"kernels[{i}]: 'name' must be the kernel's extern \"C\" name")
        if not isinstance(k.get("args"), list):
            raise SpecError(f"kernel {name}: 'args' must be a list")
        smem = k.get("smem", 0)
        check_expr(smem, vocab.scalars)
        kernels.append(KernelLaunch(name=name, grid=_dims(name, "grid", k.get("grid"), vocab),
                                    block=_dims(name, "block", k.get("block"), vocab),
                                    cluster=_dims(name, "cluster", k.get("cluster", [1, 1, 1]), vocab),
                                    smem=smem, args=[_arg(name, a, vocab) for a in k["args"]]))
    ws = d.get("workspace", 0)
    check_expr(ws, vocab.scalars)
    tiles = d.get("m_tiles", [128])
    if (not isinstance(tiles, list) or not 1 <= len(tiles) <= 4
            or not all(isinstance(t, int) and not isinstance(t, bool) and 1 <= t <= 512 for t in tiles)):
        raise SpecError("'m_tiles' must be a list of 1 to 4 integers in 1..512")
    return LaunchSpec(kernels=kernels, workspace=ws, m_tiles=list(tiles), task=task)
