"""Static legality of reordering the instructions inside one basic block.

`Checker(listing, kernel).check(block, order)` accepts or rejects a new order of one block's
instructions (indices from the original listing, top to bottom), with the first reason found.
Every rule follows from one assumption: the schedule ptxas wrote is correct, so whatever order or
distance it may have relied on is kept.

Rules ("keep order": the one above stays above):
1. Structure: `order` is a permutation of the block. Pinned instructions (the `isa` classes,
   every offset in an `.nv.info` list or a relocation, and all of a kernel with an `.nv.info`
   record `cubin` cannot vouch for) keep their place and nothing crosses them: each is a fence.
   Blocks end at every branch and EXIT, so branch targets and recorded offsets never change.
2. Registers (R, P, UR, UP; from nvdisasm's life ranges): RAW, WAR and WAW pairs keep order.
3. Memory: two accesses that may alias with at least one writing keep order (spaces from
   `isa`; a generic access aliases everything; addresses are never compared).
4. Scoreboards: a setter of SBn and a waiter on SBn keep order, so no waiter loses a setter and no
   setter slips in front of a waiter it did not precede. Any two variable-latency instructions
   keep order: ptxas relies on in-order completion (an LDSM without a scoreboard is covered by
   the wait on a later LDSM's). An instruction that depends on a variable-latency one stays below
   every wait that lay between them (one of them is its guard). Across blocks: a register that a
   variable-latency instruction elsewhere may still be writing or reading (forward dataflow over
   the CFG, predicated writes killing nothing) is touched only below every earlier wait in the block.
   And a waiter stays at least min(old, 2) stall cycles below each setter of its scoreboard (a
   scoreboard is armed a cycle after its setter issues; measured on the H100 with eval/sass_audit.py).
5. Stall distances, the rule that stands until an sm_90 latency table exists. For a producer P
   without a write scoreboard, B(P) is the smallest old stall distance from P to a reader of its
   result (in its block or at the head of a successor): the original was correct, so P's latency
   is at most B(P). Then the stall sum from P to each reader and rewriter stays >= min(old, B(P))
   (for P's first reader: does not shrink); a result live at the block's end keeps
   min(old, B(P)) to the end; an instruction touching a register that a fixed-latency producer
   in another block may have written keeps head >= min(old head, B(P) - P's tail) from the
   block's start. A variable-latency reader without a read scoreboard keeps its old distance to
   each rewriter of its sources (when it reads them is not known). `max_latency` (cycles) caps
   B(P) once a measured table says so; the default is no cap.

Does not know (left to the GPU check, which must be bit-exact):
- real latencies: rule 5 only forbids shrinking what ptxas chose, so it rejects legal moves (in
  the shipped kernels it leaves about 2% of adjacent swaps legal; a 32-cycle cap, about 9%);
- which variable-latency opcodes share an in-order queue (rule 4 assumes they all do);
- addresses (rule 3 assumes aliasing), or what a wait guards beyond "everything before it";
- hazards ptxas encodes other than in the stall and wait fields (register-bank or write-port
  conflicts, the yield bit): each instruction keeps its own control code, and `patch` clears
  reuse flags where a neighbour changes;
- WAR against a fixed-latency reader is held by order alone (it reads its sources at issue).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Sequence

from cudal2.sass import isa
from cudal2.sass.cubin import Kernel
from cudal2.sass.disasm import Block, Listing

INF = float("inf")
SB_ARM_CYCLES = 2   # stall cycles from a scoreboard's setter to the first instruction that may wait on it


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


@dataclass
class _BlockRules:
    fences: list[int] = field(default_factory=list)   # positions (in the block) of pinned instructions
    order_edges: dict[tuple[int, int], list[str]] = field(default_factory=dict)   # (a, b), a < b: a stays above b
    edges_of: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    # (P, C, cycles, why): the stall sum from P to C stays >= cycles; None is the block's start or end
    distances: list[tuple[int | None, int | None, float, str]] = field(default_factory=list)
    distances_of: dict[int, list[int]] = field(default_factory=dict)

    def keep(self, a: int, b: int, why: str) -> None:
        reasons = self.order_edges.setdefault((a, b), [])
        if not reasons:
            self.edges_of.setdefault(a, []).append((a, b))
            self.edges_of.setdefault(b, []).append((a, b))
        if why not in reasons:
            reasons.append(why)

    def at_least(self, p: int | None, c: int | None, cycles: float, why: str) -> None:
        if cycles <= 0:
            return
        self.distances.append((p, c, cycles, why))
        for i in (p, c):
            if i is not None:
                self.distances_of.setdefault(i, []).append(len(self.distances) - 1)


class Checker:
    """Legality of reorders inside one kernel's basic blocks:

        c = Cubin.read(path); listing = disassemble(c)[name]
        ch = Checker(listing, c.kernels[name])
        ch.check(block, order)   # -> Verdict(ok, reason)
        ch.swap(i)               # instruction i and i + 1 exchanged
        ch.pinned(i)             # why i never moves, or None
    """

    def __init__(self, listing: Listing, kernel: Kernel, max_latency: int | None = None):
        """`max_latency`: a measured upper bound, in cycles, on every fixed latency. None (the
        default, and the only safe value until an sm_90 latency table is committed) keeps every
        old distance; a number lets a distance shrink down to it."""
        self.listing, self.kernel = listing, kernel
        self.max_latency = INF if max_latency is None else max_latency
        self.instrs = listing.instrs
        self.cls = [isa.classify(i) for i in self.instrs]
        self.reads = [i.reads | i.unexplained() for i in self.instrs]
        self.writes = [i.writes | i.unexplained() for i in self.instrs]
        # A predicated write may not happen: it does not end the life of the previous value.
        self.kills = [w if i.pred in ("", "@PT") else frozenset() for i, w in zip(self.instrs, self.writes)]
        self.stall = [i.ctrl.stall for i in self.instrs]
        self.head = [0] * len(self.instrs)   # stall cycles from the block's start to the instruction
        self.tail = [0] * len(self.instrs)   # stall cycles from the instruction to the block's end
        for b in listing.blocks:
            acc = 0
            for i in b.indices:
                self.head[i] = acc
                acc += self.stall[i]
            for i in b.indices:
                self.tail[i] = acc - self.head[i]
        self._pinned = [self._why_pinned(i) for i in range(len(self.instrs))]
        self._pending_in, self._fixed_in = self._dataflow()
        self.bound = self._latency_bounds()
        self._rules: dict[int, _BlockRules] = {}

    # --- what may move ----------------------------------------------------------------------

    def pinned(self, index: int) -> str | None:
        """Why this instruction may not move, or None."""
        return self._pinned[index]

    def _why_pinned(self, index: int) -> str | None:
        if self.kernel.unknown:
            return "kernel has .nv.info records the checker cannot vouch for: " + "; ".join(self.kernel.unknown)
        ins = self.instrs[index]
        if ins.offset in self.kernel.pinned:
            return "offset recorded in " + ", ".join(self.kernel.pinned[ins.offset])
        return self.cls[index].pinned

    # --- cross-block state ------------------------------------------------------------------

    def _dataflow(self) -> tuple[list[set[str]], list[dict[str, set[int]]]]:
        """Per block, at entry: the registers a variable-latency instruction elsewhere may still be
        writing or reading (its last event on the register was variable latency), and for each
        register the fixed-latency (no write scoreboard) instructions whose write may reach.
        Union over predecessors, iterated to a fixed point; nothing is pending at kernel entry."""
        blocks = self.listing.blocks
        gen_pending, gen_fixed, events, written = [], [], [], []
        for b in blocks:
            pend: dict[str, bool] = {}
            last: dict[str, set[int]] = {}
            for i in b.indices:
                var = self.cls[i].variable
                if var:
                    for r in self.reads[i]:
                        pend[r] = True
                for r in self.writes[i]:
                    if r in self.kills[i]:
                        pend[r], last[r] = var, {i}
                    else:
                        pend[r] = pend.get(r, False) or var
                        last.setdefault(r, set()).add(i)
            gen_pending.append({r for r, v in pend.items() if v})
            gen_fixed.append({r: {i for i in v if self.instrs[i].ctrl.wbar is None} for r, v in last.items()})
            events.append({r for r in pend if any(r in self.kills[i] for i in b.indices)})
            written.append({r for r in last if any(r in self.kills[i] for i in b.indices)})
        pending_in = [set() for _ in blocks]
        fixed_in: list[dict[str, set[int]]] = [{} for _ in blocks]
        changed = True
        while changed:
            changed = False
            for b in blocks:
                p_out = gen_pending[b.index] | (pending_in[b.index] - events[b.index])
                f_out = {r: set(v) for r, v in fixed_in[b.index].items() if r not in written[b.index]}
                for r, v in gen_fixed[b.index].items():
                    f_out.setdefault(r, set()).update(v)
                for s in b.succs:
                    if not p_out <= pending_in[s]:
                        pending_in[s] |= p_out
                        changed = True
                    for r, ps in f_out.items():
                        have = fixed_in[s].setdefault(r, set())
                        if not ps <= have:
                            have |= ps
                            changed = True
        return pending_in, fixed_in

    def _latency_bounds(self) -> dict[int, float]:
        """For each fixed-latency producer: the smallest old stall distance to an instruction that
        reads its result, in its block or at the head of a successor block (INF if none is
        known). The original is correct, so the latency it needs is at most this."""
        out: dict[int, float] = {}
        blocks = self.listing.blocks
        for b in blocks:
            for i in b.indices:
                if self.instrs[i].ctrl.wbar is not None or not self.writes[i]:
                    continue
                best = INF
                for r in self.writes[i]:
                    for c in range(i + 1, b.last + 1):
                        if r in self.reads[c]:
                            best = min(best, self.head[c] - self.head[i])
                            break
                        if r in self.kills[c]:
                            break
                    else:
                        for s in b.succs:
                            for c in blocks[s].indices:
                                if r in self.reads[c]:
                                    best = min(best, self.tail[i] + self.head[c])
                                    break
                                if r in self.kills[c]:
                                    break
                out[i] = min(best, self.max_latency)
        return out

    # --- per-block rules --------------------------------------------------------------------

    def rules(self, block: Block) -> _BlockRules:
        if block.index in self._rules:
            return self._rules[block.index]
        R = _BlockRules()
        idx = list(block.indices)
        ins, cls, rd, wr = self.instrs, self.cls, self.reads, self.writes
        dist = lambda a, b: self.head[b] - self.head[a]  # noqa: E731  (a above b, same block)
        R.fences = [i - block.first for i in idx if self.pinned(i)]
        free = [i for i in idx if not self.pinned(i)]

        # Rules 2-4, pairwise (pinned instructions are fences: handled in check()). Pairs are
        # found per register, per scoreboard and among variable-latency instructions, not over all
        # n^2 pairs.
        touches: dict[str, list[int]] = {}
        for i in free:
            for r in rd[i] | wr[i]:
                touches.setdefault(r, []).append(i)
        for r, seq in touches.items():
            for k, a in enumerate(seq):
                for b in seq[k + 1:]:
                    kind = "RAW" if r in wr[a] and r in rd[b] else "WAW" if r in wr[a] and r in wr[b] else \
                        "WAR" if r in rd[a] and r in wr[b] else None
                    if kind:
                        R.keep(a, b, f"{kind} on {r}")
        # Rule 4, and 4b: a scoreboard is armed a cycle after its setter issues, so a wait issued
        # sooner passes before the result exists (on the H100: S2UR then at once a wait on its SB
        # read a stale UR4, an illegal address, in 10 of 10 such schedules and in none of 37
        # others). Setter to waiter keeps min(old, SB_ARM_CYCLES) stall cycles, pinned ends
        # included; a setter near the block's end and a waiter near its start keep the same to the
        # boundary.
        for sb in range(6):
            setters = [i for i in idx if sb in ins[i].ctrl.sets]
            waiting = [i for i in idx if sb in ins[i].ctrl.waits]
            for s in setters:
                for w in waiting:
                    if s != w and not self.pinned(s) and not self.pinned(w):
                        R.keep(min(s, w), max(s, w), f"scoreboard setter/waiter SB{sb}")
                later = [w for w in waiting if w > s]
                for w in later:
                    R.at_least(s, w, min(dist(s, w), SB_ARM_CYCLES),
                               f"scoreboard SB{sb} set at {ins[s].offset:#06x} is armed too late for the wait "
                               f"at {ins[w].offset:#06x}")
                if not later:
                    R.at_least(s, None, min(self.tail[s], SB_ARM_CYCLES),
                               f"scoreboard SB{sb} set at {ins[s].offset:#06x}: cycles to the block end")
            for w in waiting:
                if not any(s < w for s in setters):
                    R.at_least(None, w, min(self.head[w], SB_ARM_CYCLES),
                               f"a wait on SB{sb} at {ins[w].offset:#06x}: cycles from the block start")
        var = [i for i in free if cls[i].variable]
        for k, a in enumerate(var):
            for b in var[k + 1:]:
                spaces = isa.may_alias(cls[a], cls[b])   # memory is always variable latency
                if spaces:
                    R.keep(a, b, f"memory may alias ({','.join(sorted(spaces))})")
                R.keep(a, b, "both variable latency (in-order completion may be relied on)")

        waiters = [i for i in idx if ins[i].ctrl.wait]
        for k, p in enumerate(idx):
            later = idx[k + 1:]
            # Rule 4: a dependent of a variable-latency P stays below the waits between them.
            if cls[p].variable:
                first_waiter = bisect.bisect_right(waiters, p)
                for c in later:
                    if (wr[p] & (rd[c] | wr[c])) or (rd[p] & wr[c]):
                        for w in waiters[first_waiter:bisect.bisect_left(waiters, c)]:
                            R.keep(w, c, f"guarded by the wait at {ins[w].offset:#06x} for {ins[p].offset:#06x}")
            # Rule 5: a producer without a write scoreboard keeps its distances.
            if ins[p].ctrl.wbar is None and wr[p]:
                deps, live_out = set(), False
                for r in wr[p]:
                    for c in later:
                        if r in rd[c] or r in wr[c]:
                            deps.add(c)
                        if r in self.kills[c]:
                            break
                    else:
                        live_out = True
                for c in deps:
                    R.at_least(p, c, min(dist(p, c), self.bound[p]),
                               f"stall distance {ins[p].offset:#06x}->{ins[c].offset:#06x}")
                if live_out:
                    R.at_least(p, None, min(self.tail[p], self.bound[p]),
                               f"stall distance {ins[p].offset:#06x}->block end")
            # A variable-latency reader without a read scoreboard: when it reads its sources is not
            # known, so the next rewriter of each keeps its old distance.
            if cls[p].variable and ins[p].ctrl.rbar is None:
                for r in rd[p]:
                    for c in later:
                        if r in wr[c]:
                            R.at_least(p, c, dist(p, c), f"stall distance {ins[p].offset:#06x} reads {r} "
                                                         f"before {ins[c].offset:#06x} rewrites it")
                        if r in self.kills[c]:
                            break

        # Across blocks: registers still pending from elsewhere, and fixed-latency writes that reach.
        pending, fixed = self._pending_in[block.index], self._fixed_in[block.index]
        seen_written: set[str] = set()
        for c in idx:
            touched = (rd[c] | wr[c]) - seen_written
            if touched & pending:
                for w in waiters[:bisect.bisect_left(waiters, c)]:
                    R.keep(w, c, f"guarded by the wait at {ins[w].offset:#06x} "
                                 f"for {','.join(sorted(touched & pending))} from another block")
            need = 0.0
            for r in touched:
                for p in fixed.get(r, ()):
                    # tail(P) + head(C) must stay >= min(old, B(P)). P's tail stays >= min(old, B(P))
                    # (rule 5 in P's block), so head(C) >= min(old, B(P) - tail(P)) suffices.
                    need = max(need, min(self.head[c], self.bound[p] - self.tail[p]))
            R.at_least(None, c, need, f"stall distance block start->{ins[c].offset:#06x}")
            seen_written |= self.kills[c]
        self._rules[block.index] = R
        return R

    # --- checking ---------------------------------------------------------------------------

    def check(self, block: Block | int, order: Sequence[int]) -> Verdict:
        """Accept or reject `order` (the block's instruction indices, top to bottom)."""
        block = self.listing.blocks[block] if isinstance(block, int) else block
        idx = list(block.indices)
        order = list(order)
        if sorted(order) != idx:
            return Verdict(False, f"not a permutation of block {block.index} (instructions {idx[0]}..{idx[-1]})")
        new_pos = {i: k for k, i in enumerate(order)}
        moved = [i for i in idx if new_pos[i] != i - block.first]
        if not moved:
            return Verdict(True)
        for i in moved:
            why = self.pinned(i)
            if why:
                return Verdict(False, f"moves pinned {self.instrs[i]}: {why}")
        R = self.rules(block)
        for i in moved:
            old, new = i - block.first, new_pos[i]
            if bisect.bisect(R.fences, old) != bisect.bisect(R.fences, new):
                fence = R.fences[bisect.bisect(R.fences, min(old, new))] + block.first
                return Verdict(False, f"{self.instrs[i]} crosses pinned {self.instrs[fence]}: {self.pinned(fence)}")
        for i in moved:
            for a, b in R.edges_of.get(i, ()):
                if new_pos[a] > new_pos[b]:
                    return Verdict(False, f"{self.instrs[b]} moved above {self.instrs[a]}: "
                                          + "; ".join(R.order_edges[(a, b)]))
        # Only a distance with an end inside the permuted range can change.
        lo, hi = min(new_pos[i] for i in moved), max(new_pos[i] for i in moved)
        prefix = [0]
        for i in order:
            prefix.append(prefix[-1] + self.stall[i])
        for n in sorted({n for i in order[lo:hi + 1] for n in R.distances_of.get(i, ())}):
            p, c, need, why = R.distances[n]
            start = prefix[new_pos[p]] if p is not None else 0
            end = prefix[new_pos[c]] if c is not None else prefix[-1]
            if end - start < need:
                return Verdict(False, f"{why}: {end - start} cycles < {need:g}")
        return Verdict(True)

    def swap(self, index: int) -> Verdict:
        """Whether swapping instruction `index` with the next one, in the original order, is legal."""
        b = self.listing.block_of(index)
        if index + 1 > b.last:
            return Verdict(False, "last instruction of its block")
        order = list(b.indices)
        k = index - b.first
        order[k], order[k + 1] = order[k + 1], order[k]
        return self.check(b, order)
