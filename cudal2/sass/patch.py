"""Apply a reordering of one basic block to a cubin, with no assembler.

Guarantees:
- `permute(cubin, listing, block, order)` returns new cubin bytes in which the block's 16-byte
  words appear in `order`; each word keeps its own control code (stall, yield, scoreboards,
  wait mask) because it moves whole;
- operand-reuse flags (bits 122-125) are cleared on every instruction whose predecessor or
  successor in the text changed, the instructions just outside the block included: a reuse flag
  promises the next instruction a cached operand, a promise that only held for the old neighbour;
- it refuses (`PatchError`) an order that is not a permutation of the block, or that moves a
  PC-relative instruction (its encoded target is relative to its own address) or an instruction
  at an offset `.nv.info` or a relocation records. Nothing else in the ELF changes, so branch
  targets, `.nv.info` and relocations stay exact;
- an identity order returns the input bytes unchanged.

Does not: decide legality (`legality.Checker` does; run it first), or touch more than one block
per call (apply several calls in turn; the offsets of other blocks never change).
"""

from __future__ import annotations

from typing import Sequence

from cudal2.sass import isa
from cudal2.sass.cubin import WORD, Cubin
from cudal2.sass.disasm import Block, Listing, clear_reuse


class PatchError(ValueError):
    """An order this module will not write."""


def permute(cub: Cubin, listing: Listing, block: Block | int, order: Sequence[int]) -> bytes:
    block = listing.blocks[block] if isinstance(block, int) else block
    idx, order = list(block.indices), list(order)
    if sorted(order) != idx:
        raise PatchError(f"order is not a permutation of block {block.index} (instructions {idx[0]}..{idx[-1]})")
    if order == idx:
        return cub.data
    kernel = cub.kernels[listing.kernel]
    for new, old in zip(idx, order):
        if new == old:
            continue
        ins = listing.instrs[old]
        if isa.classify(ins).pc_relative:
            raise PatchError(f"{ins} is PC-relative and may not move")
        if ins.offset in kernel.pinned:
            raise PatchError(f"{ins} is at an offset recorded in {', '.join(kernel.pinned[ins.offset])}")

    words = cub.words(listing.kernel)
    n = len(listing.instrs)            # the listed instructions; padding after them never moves
    layout = list(range(n))            # layout[position] = original index of the instruction there
    layout[block.first:block.last + 1] = order
    out = list(words)
    for p in range(n):
        old = layout[p]
        before = layout[p - 1] if p > 0 else None
        after = layout[p + 1] if p + 1 < n else None
        if before != (old - 1 if old > 0 else None) or after != (old + 1 if old + 1 < n else None):
            out[p] = clear_reuse(words[old])
        else:
            out[p] = words[old]
    return cub.with_text(listing.kernel, b"".join(out))


def is_permutation_of(new: bytes, old: bytes) -> bool:
    """Whether `new` holds the same instruction words as `old` up to order and reuse flags."""
    norm = lambda t: sorted(clear_reuse(t[i:i + WORD]) for i in range(0, len(t), WORD))  # noqa: E731
    return len(new) == len(old) and norm(new) == norm(old)
