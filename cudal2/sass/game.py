"""The assembly game (CuAsmRL, arXiv 2501.08071) on one sm_90 kernel: state, features, actions,
mask and reward.

    game = Game(cubin_bytes, measure)          # measure(cubin_bytes) -> gain over the original
    mask = game.mask()                         # which of the 2n actions the checker allows
    obs, reward, done, info = game.step(a)     # a = 2 * position + (0: up, 1: down)

Guarantees:
- state: the current order of every basic block of one kernel (`layout[position]` = the index,
  in the original listing, of the instruction now at that text position). Blocks never change
  extent, so a position always belongs to the same block, and every block is checked on its own
  (`legality.Checker` composes across blocks by construction);
- actions: move the instruction at a position up or down one slot inside its block (action
  `2 * pos` is up, `2 * pos + 1` down; "down at p" and "up at p + 1" are the same swap, as in
  CuAsmRL). `mask()` is True exactly where the checker accepts the whole block order that the
  move produces; `apply` refuses (`IllegalMove`) any action the mask refuses, so no state the
  game reaches was ever rejected by the checker;
- features: one row per instruction, in text order (`FEATURES` names the columns): opcode class,
  latency class from the measured H100 table (`LATENCY_H100`, the numbers of
  `eval/results/sass_latency_h100_2026-11-23.json`; 0 and `latency_measured` = 0 for an opcode
  it does not cover), the control fields (stall, yield, scoreboards, waits), slots and stall
  cycles to the nearest producer above and consumer below in the current order, whether it may
  move and whether each direction is legal now, whether its block is in a loop, where it sits
  in its block and how far it has moved;
- reward: `measure(cubin)` returns the gain of a patched cubin over the original (0 means as
  fast, 0.05 means 5% faster: a paired timing ratio minus one on the GPU, see `verify`). It is
  called once per distinct schedule (cached) unless `fresh=True`, which is how a gain is
  reproduced; a measure that raises `Rejected` (the GPU found the kernel wrong or faulting) is
  counted in `stats.gpu_failed`, and `step` then gives reward -1 and ends the episode (as in
  CuAsmRL);
- cost: `stats` counts schedules judged by the checker and rejected, measurements and the wall
  seconds spent inside `measure` (the GPU cost), and GPU failures;
- `cubin()` writes the state with `patch.permute`, block by block, from the original bytes:
  whole 16-byte words, reuse flags cleared where a neighbour changed, nothing else in the ELF.

Does not:
- know whether a schedule is faster: every number comes from `measure`;
- let a pinned instruction move or anything cross it (the checker's fences), or reorder across
  blocks;
- judge correctness on the device: a reordered cubin is trusted only after `verify.bitwise`.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from cudal2.sass import isa, patch
from cudal2.sass.cubin import Cubin
from cudal2.sass.disasm import Instr, Listing, disassemble
from cudal2.sass.legality import Checker

Measure = Callable[[bytes], float]

# Cycles per dependent link, measured on an H100 80GB HBM3 with chains of 256 (every entry was
# marked trusted): eval/results/sass_latency_h100_2026-11-23.json. LDG is an L1 hit (a lower bound
# for global loads).
LATENCY_H100 = {
    "IADD3": 4.0, "IMAD": 3.9921875, "LOP3": 4.0, "SHF": 4.0, "FFMA": 4.0, "FADD": 4.0, "HFMA2": 7.984375,
    "MUFU.EX2": 17.03515625, "MUFU.RSQ": 38.9921875, "LDS": 33.41796875, "LDG.L1hit": 49.87890625,
    "HMMA.16816.F32": 23.98046875,
}

OPCLASSES = ("alu", "fp", "tensor", "uniform", "load_global", "load_shared", "async_copy", "store", "variable",
             "control")
FEATURES = tuple(f"class_{c}" for c in OPCLASSES) + (
    "latency_cycles", "latency_measured", "stall", "yield", "sets_write_sb", "sets_read_sb", "waits",
    "producer_slots", "producer_cycles", "consumer_slots", "consumer_cycles",
    "movable", "can_move_up", "can_move_down", "in_loop", "block_position", "displacement")
WINDOW = 32         # slots scanned for producers and consumers (features saturate there)
CYCLES_SCALE = 64.0


class IllegalMove(ValueError):
    """An action the mask refuses (out of the block, pinned, or rejected by the checker)."""


class Rejected(RuntimeError):
    """From `measure`: the GPU refused the schedule (outputs differ from the original's, a fault,
    a hang). The checker passed it, so this is a checker bug to report."""


@dataclass
class Stats:
    checked: int = 0        # schedules the legality checker judged
    rejected: int = 0       # ... and refused
    measured: int = 0       # calls of measure (each one costs GPU time)
    measure_s: float = 0.0  # wall seconds inside measure
    gpu_failed: int = 0     # schedules the checker passed and the GPU refused (must stay 0)
    cache_hits: int = 0     # measurements saved by the schedule cache

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def latency(ins: Instr, table: dict[str, float] = LATENCY_H100) -> float | None:
    """Cycles per dependent link for this opcode from `table`: the full opcode, else the longest
    key that is a prefix of it at a '.' boundary (IMAD.MOV.U32 -> IMAD), else the largest entry
    with the same base opcode (MUFU.RCP -> the slowest MUFU measured; LDG.E.128 -> LDG.L1hit);
    None when the table has nothing for the base opcode."""
    op = ins.opcode
    if op in table:
        return table[op]
    parts = op.split(".")
    for k in range(len(parts) - 1, 0, -1):
        key = ".".join(parts[:k])
        if key in table:
            return table[key]
    same = [v for k, v in table.items() if k.split(".")[0] == ins.base]
    return max(same) if same else None


def opclass(ins: Instr, cls: isa.OpClass, pinned: bool) -> str:
    base = ins.base
    if pinned:
        return "control"
    if base in ("HMMA", "IMMA"):
        return "tensor"
    if base == "LDGSTS":
        return "async_copy"
    if base in isa.MEMORY:
        if cls.writes:
            return "store"
        return "load_shared" if cls.reads == isa.S else "load_global"
    if base in isa.VARIABLE:
        return "variable"
    if base.startswith("U"):
        return "uniform"
    if base[0] in "FHD":
        return "fp"
    return "alu"


def _loop_blocks(listing: Listing) -> set[int]:
    """Blocks that can reach themselves through the CFG."""
    out = set()
    for b in listing.blocks:
        seen, todo = set(), list(b.succs)
        while todo:
            x = todo.pop()
            if x == b.index:
                out.add(b.index)
                break
            if x not in seen:
                seen.add(x)
                todo.extend(listing.blocks[x].succs)
    return out


def pick_kernel(cub: Cubin, listings: dict[str, Listing], max_latency: int | None = None) -> str:
    """The kernel with the most instructions that may move (ties: the longer one)."""
    def movable(name: str) -> tuple[int, int]:
        ch = Checker(listings[name], cub.kernels[name], max_latency)
        return sum(ch.pinned(i) is None for i in range(len(listings[name].instrs))), len(listings[name].instrs)
    return max(listings, key=movable)


class Game:
    def __init__(self, cubin: bytes, measure: Measure, kernel: str | None = None, max_latency: int | None = None,
                 table: dict[str, float] = LATENCY_H100):
        """`cubin`: an ELF cubin (`cubin.extract` gets one out of a fatbin or .so); `kernel`: which
        of its kernels to play (default: the one with the most movable instructions);
        `max_latency`: passed to the checker (None keeps every stall distance ptxas chose)."""
        self.original = bytes(cubin)
        self.cub = Cubin.from_bytes(self.original)
        listings = disassemble(self.cub)
        self.kernel = kernel or pick_kernel(self.cub, listings, max_latency)
        if self.kernel not in listings:
            raise KeyError(f"no kernel {self.kernel!r} in this cubin (it has {', '.join(sorted(listings))})")
        self.listing = listings[self.kernel]
        self.checker = Checker(self.listing, self.cub.kernels[self.kernel], max_latency)
        self.measure = measure
        self.instrs = self.listing.instrs
        self.n = len(self.instrs)
        self.stats = Stats()
        self.block_at = [0] * self.n
        for b in self.listing.blocks:
            for i in b.indices:
                self.block_at[i] = b.index
        self._pinned = [self.checker.pinned(i) is not None for i in range(self.n)]
        self.loop_blocks = _loop_blocks(self.listing)
        self._static = self._static_features(table)
        self._gains: dict[str, float] = {}
        self.layout = list(range(self.n))
        self._swap_ok: dict[int, dict[int, bool]] = {}   # block -> {upper position of a pair: legal}
        self.rejections: list[dict] = []   # the first schedules the GPU refused (orders and why)

    # --- state -------------------------------------------------------------------------------

    def reset(self) -> np.ndarray:
        self.layout = list(range(self.n))
        self._swap_ok.clear()
        return self.features()

    def order(self, block: int) -> list[int]:
        b = self.listing.blocks[block]
        return self.layout[b.first:b.last + 1]

    def orders(self) -> dict[int, list[int]]:
        """The blocks whose order differs from the original: block index -> original indices, top to bottom."""
        return {b.index: self.order(b.index) for b in self.listing.blocks if self.order(b.index) != list(b.indices)}

    def set_orders(self, orders: dict[int, list[int]]) -> None:
        """Jump to a state (every block not named goes back to its original order); each named
        order must pass the checker."""
        layout = list(range(self.n))
        for bi, order in orders.items():
            b = self.listing.blocks[int(bi)]
            v = self._check(b.index, list(order))
            if not v:
                raise IllegalMove(f"block {b.index}: {v.reason}")
            layout[b.first:b.last + 1] = list(order)
        self.layout = layout
        self._swap_ok.clear()

    def key(self) -> str:
        return hashlib.sha256(repr(sorted(self.orders().items())).encode()).hexdigest()[:24]

    def displaced(self) -> int:
        """How many instructions are not at their original position."""
        return sum(i != p for p, i in enumerate(self.layout))

    def cubin(self) -> bytes:
        return patched(self.cub, self.listing, self.orders())

    # --- actions -----------------------------------------------------------------------------

    @property
    def n_actions(self) -> int:
        return 2 * self.n

    def _pair(self, action: int) -> int | None:
        """The upper position of the two the action swaps, or None when it leaves the block."""
        if not 0 <= action < 2 * self.n:
            return None
        pos, down = divmod(action, 2)
        p = pos if down else pos - 1
        if p < 0 or p + 1 >= self.n or self.block_at[p] != self.block_at[p + 1]:
            return None
        return p

    def _check(self, block: int, order: list[int]):
        self.stats.checked += 1
        v = self.checker.check(self.listing.blocks[block], order)
        if not v:
            self.stats.rejected += 1
        return v

    def swap_ok(self, p: int) -> bool:
        """Whether swapping the instructions now at positions p and p + 1 is legal (cached per block)."""
        if p < 0 or p + 1 >= self.n or self.block_at[p] != self.block_at[p + 1]:
            return False
        bi = self.block_at[p]
        cache = self._swap_ok.setdefault(bi, {})
        if p not in cache:
            a, b = self.layout[p], self.layout[p + 1]
            if self._pinned[a] or self._pinned[b]:
                cache[p] = False           # never movable: not a schedule the checker needs to see
            else:
                blk = self.listing.blocks[bi]
                order = self.order(bi)
                k = p - blk.first
                order[k], order[k + 1] = order[k + 1], order[k]
                cache[p] = bool(self._check(bi, order))
        return cache[p]

    def mask(self) -> np.ndarray:
        """Bool per action (2n): True where the move is legal in the current state."""
        ok = np.array([self.swap_ok(p) for p in range(self.n - 1)] + [False], dtype=bool)
        m = np.zeros(2 * self.n, dtype=bool)
        m[1::2] = ok                      # down at p: swap (p, p + 1)
        m[2::2] = ok[:-1]                 # up at p + 1: the same swap
        return m

    def legal_swaps(self) -> list[int]:
        """Every legal move once: the 'down' action of each swappable pair."""
        return [2 * p + 1 for p in range(self.n - 1) if self.swap_ok(p)]

    def _swap(self, p: int) -> None:
        self.layout[p], self.layout[p + 1] = self.layout[p + 1], self.layout[p]
        self._swap_ok.pop(self.block_at[p], None)

    def apply(self, action: int) -> None:
        p = self._pair(action)
        if p is None or not self.swap_ok(p):
            raise IllegalMove(f"action {action} ({'down' if action % 2 else 'up'} at position {action // 2}) "
                              "is not legal in this state")
        self._swap(p)

    def undo(self, action: int) -> None:
        """Take back `apply(action)` (the same swap again: the previous state was legal)."""
        p = self._pair(action)
        if p is None:
            raise IllegalMove(f"action {action} swaps nothing")
        self._swap(p)

    # --- reward ------------------------------------------------------------------------------

    def evaluate(self, fresh: bool = False) -> float | None:
        """The measured gain of the current state over the original (0.0 for the original itself,
        unmeasured); None when the GPU refused it. Cached per schedule unless `fresh`."""
        if not self.orders():
            return 0.0
        k = self.key()
        if not fresh and k in self._gains:
            self.stats.cache_hits += 1
            return self._gains[k]
        data = self.cubin()
        t0 = time.monotonic()
        self.stats.measured += 1
        try:
            g = float(self.measure(data))
        except Rejected as err:
            self.stats.gpu_failed += 1
            if len(self.rejections) < 5:   # the checker allowed it and the GPU did not: evidence to mend the checker
                self.rejections.append({"orders": {str(b): o for b, o in self.orders().items()}, "reason": str(err)})
            return None
        finally:
            self.stats.measure_s += time.monotonic() - t0
        if not math.isfinite(g):
            raise ValueError(f"measure returned {g}")
        if not fresh:
            self._gains[k] = g
        return g

    def step(self, action: int) -> tuple[np.ndarray, float, bool, dict]:
        """Gym-style: apply, measure; reward = the change in gain (-1 and done when the GPU refused it)."""
        before = self.evaluate()
        self.apply(action)
        after = self.evaluate()
        if after is None or before is None:
            return self.features(), -1.0, True, {"gpu_failed": True}
        return self.features(), after - before, False, {"gain": after}

    # --- features ----------------------------------------------------------------------------

    def _static_features(self, table: dict[str, float]) -> np.ndarray:
        """The per-instruction columns that do not depend on the order."""
        F = {name: j for j, name in enumerate(FEATURES)}
        out = np.zeros((self.n, len(FEATURES)), dtype=np.float32)
        for i, ins in enumerate(self.instrs):
            c = ins.ctrl
            out[i, F["class_" + opclass(ins, self.checker.cls[i], self._pinned[i])]] = 1
            lat = latency(ins, table)
            out[i, F["latency_cycles"]] = min(lat or 0.0, CYCLES_SCALE) / CYCLES_SCALE
            out[i, F["latency_measured"]] = lat is not None
            out[i, F["stall"]] = c.stall / 15
            out[i, F["yield"]] = c.yield_
            out[i, F["sets_write_sb"]] = c.wbar is not None
            out[i, F["sets_read_sb"]] = c.rbar is not None
            out[i, F["waits"]] = len(c.waits) / 6
            out[i, F["movable"]] = not self._pinned[i]
            out[i, F["in_loop"]] = self.block_at[i] in self.loop_blocks
        return out

    def features(self) -> np.ndarray:
        """(n, len(FEATURES)) float32, one row per text position in the current order."""
        F = {name: j for j, name in enumerate(FEATURES)}
        out = self._static[self.layout].copy()
        rd, wr, stall = self.checker.reads, self.checker.writes, self.checker.stall
        for b in self.listing.blocks:
            n_b = len(b)
            for p in b.indices:
                i = self.layout[p]
                prod = next((q for q in range(p - 1, max(b.first, p - WINDOW) - 1, -1)
                             if wr[self.layout[q]] & rd[i]), None)
                cons = next((q for q in range(p + 1, min(b.last, p + WINDOW) + 1)
                             if wr[i] & rd[self.layout[q]]), None)
                out[p, F["producer_slots"]] = 1.0 if prod is None else (p - prod) / WINDOW
                out[p, F["producer_cycles"]] = 1.0 if prod is None else \
                    min(sum(stall[self.layout[q]] for q in range(prod, p)), CYCLES_SCALE) / CYCLES_SCALE
                out[p, F["consumer_slots"]] = 1.0 if cons is None else (cons - p) / WINDOW
                out[p, F["consumer_cycles"]] = 1.0 if cons is None else \
                    min(sum(stall[self.layout[q]] for q in range(p, cons)), CYCLES_SCALE) / CYCLES_SCALE
                out[p, F["can_move_up"]] = self.swap_ok(p - 1) if p > b.first else False
                out[p, F["can_move_down"]] = self.swap_ok(p) if p < b.last else False
                out[p, F["block_position"]] = (p - b.first) / max(1, n_b - 1)
                out[p, F["displacement"]] = max(-1.0, min(1.0, (p - i) / WINDOW))
        return out


def patched(cub: Cubin, listing: Listing, orders: dict[int, list[int]]) -> bytes:
    """The cubin with each named block of `listing`'s kernel in its new order (original indices),
    applied block by block from `cub`'s bytes (each block is written once, from its original
    words, so the composition is exact). Does not check legality: run the checker first."""
    data = cub.data
    for bi in sorted(int(k) for k in orders):
        data = patch.permute(Cubin.from_bytes(data), listing, listing.blocks[bi], list(orders[bi]))
    return data


def replay(cubin: bytes, kernel: str, orders: dict, max_latency: int | None = None) -> bytes:
    """Apply a recorded schedule (`Game.orders()`, e.g. from an entry's provenance; JSON keys may
    be strings) to `cubin`, checking every block with the legality checker first. Raises
    `IllegalMove` when the checker refuses a block (another toolkit's code, a stale schedule)."""
    cub = Cubin.from_bytes(cubin)
    listing = disassemble(cub)[kernel]
    ch = Checker(listing, cub.kernels[kernel], max_latency)
    orders = {int(k): list(v) for k, v in orders.items()}
    for bi, order in orders.items():
        v = ch.check(listing.blocks[bi], order)
        if not v:
            raise IllegalMove(f"block {bi}: {v.reason}")
    return patched(cub, listing, orders)

