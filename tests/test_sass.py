"""cudal2.sass on real compiled kernels, CPU only: the cubin round-trips byte for byte, nvdisasm's
view matches the bytes, the legality checker rejects known-illegal reorders (a register
dependency, a scoreboard wait above its setter, a pinned instruction, in-order completion, a
shrinking stall distance) and accepts a harmless one, and a patched cubin disassembles to the
intended order."""

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from cudal2.sass import disasm, isa, patch, tools
from cudal2.sass.cubin import Cubin, extract
from cudal2.sass.disasm import Control, clear_reuse
from cudal2.sass.legality import Checker

pytestmark = pytest.mark.skipif(tools.find("nvdisasm") is None or tools.find("cuobjdump") is None,
                                reason="nvdisasm/cuobjdump missing (pip install nvidia-cuda-nvdisasm==13.2.* "
                                       "nvidia-cuda-cuobjdump==13.2.*)")

SHIPPED = Path(__file__).parent.parent / "kernels_out" / "sm90"
UNROLLED = SHIPPED / "128x128x64-sm80-35da330ffc.cubin"     # one k-tile: straight-line code, two blocks
LOOPED = SHIPPED / "128x64x12288-sm80-fe873ae88d.cubin"     # split-K: a cp.async/ldmatrix/mma loop + reduce

# Warp-wide and mbarrier instructions, so that .nv.info carries COOP_GROUP, INT_WARP_WIDE and
# MBARRIER offsets besides EXIT.
SYNC_SRC = r"""
extern "C" __global__ void mbar(int* x) {
  __shared__ unsigned long long bar;
  unsigned a = (unsigned)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(a), "r"(32));
  __syncthreads();
  unsigned long long st;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(st) : "r"(a));
  unsigned ok = 0;
  while (!ok) asm volatile("{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0,1,0,p; }"
                           : "=r"(ok) : "r"(a), "l"(st));
  x[threadIdx.x] = 1;
}
extern "C" __global__ void warpwide(int* x) {
  int v = x[threadIdx.x];
  x[threadIdx.x] = __reduce_add_sync(0xffffffff, v) + __match_any_sync(0xffffffff, v) + __shfl_sync(0xffffffff, v, 3);
}
"""


@pytest.fixture(scope="module")
def unrolled():
    c = Cubin.read(UNROLLED)
    return c, disasm.disassemble(c)["sm80_hgemm"]


@pytest.fixture(scope="module")
def looped():
    c = Cubin.read(LOOPED)
    listings = disasm.disassemble(c)
    return c, listings["sm80_hgemm"], listings


@pytest.fixture(scope="module")
def sync_cubin(tmp_path_factory):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    d = tmp_path_factory.mktemp("sync")
    (d / "k.cu").write_text(SYNC_SRC)
    for kind in ("cubin", "fatbin"):
        subprocess.run(["nvcc", f"-{kind}", "-arch=sm_90a", "-o", f"k.{kind}", "k.cu"], cwd=d, check=True,
                       capture_output=True)
    return d


def cuobjdump_attrs(path) -> dict[str, list[tuple[str, str]]]:
    """(name, value) of every .nv.info record, per section, as cuobjdump -elf prints them."""
    out, section, name = {}, None, None
    for line in tools.run("cuobjdump", ["-elf", str(path)]).splitlines():
        if re.match(r"^\.nv\.info(\.\S+)?$", line):
            section = line.strip()
            out[section] = []
        elif line.startswith(".") or not line.strip():
            section = None if line.startswith(".") else section
        elif section and line.strip().startswith("Attribute:"):
            name = line.split()[-1]
        elif section and line.strip().startswith("Value:") and name:
            out[section].append((name, line.split("Value:", 1)[1].strip()))
            name = None
    return out


def swapped(block, index):
    order = list(block.indices)
    k = index - block.first
    order[k], order[k + 1] = order[k + 1], order[k]
    return order


def moved(block, src, dst):
    """The block's order with instruction `src` taken out and put where `dst` is."""
    order = [i for i in block.indices if i != src]
    order.insert(order.index(dst) + (1 if dst > src else 0), src)
    return order


def strip_reuse(text):
    return text.replace(".reuse", "")


# --- cubin ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(SHIPPED.glob("*.cubin")), ids=lambda p: p.stem)
def test_shipped_cubin_round_trips_byte_identical(path):
    data = path.read_bytes()
    c = Cubin.from_bytes(data)
    assert c.kernels and all(not k.unknown for k in c.kernels.values())
    for name, k in c.kernels.items():
        words = c.words(name)
        assert len(words) == k.n_instructions and all(len(w) == 16 for w in words)
        assert c.with_text(name, b"".join(words)) == data


def test_text_of_another_size_is_refused(unrolled):
    c, _ = unrolled
    with pytest.raises(ValueError):
        c.with_text("sm80_hgemm", c.text("sm80_hgemm")[:-16])


@pytest.mark.parametrize("path", [UNROLLED, LOOPED], ids=lambda p: p.stem)
def test_nv_info_names_and_exit_offsets_agree_with_cuobjdump(path):
    c = Cubin.read(path)
    theirs = cuobjdump_attrs(path)
    for name, k in c.kernels.items():
        assert [f"EIATTR_{a.name}" for a in k.attrs] == [n for n, _ in theirs[f".nv.info.{name}"]]
        exits = [int(v, 16) for n, val in theirs[f".nv.info.{name}"] if n == "EIATTR_EXIT_INSTR_OFFSETS"
                 for v in val.split()]
        assert exits and sorted(o for o, why in k.pinned.items() if "EXIT_INSTR_OFFSETS" in why) == sorted(exits)
    assert [f"EIATTR_{a.name}" for a in c.global_attrs] == [n for n, _ in theirs[".nv.info"]]


def test_warp_wide_and_mbarrier_offsets_are_pinned_where_cuobjdump_says(sync_cubin):
    path = sync_cubin / "k.cubin"
    c = Cubin.read(path)
    listings = disasm.disassemble(c)
    theirs = cuobjdump_attrs(path)
    seen = set()
    for name, k in c.kernels.items():
        assert not k.unknown, k.unknown
        assert [f"EIATTR_{a.name}" for a in k.attrs] == [n for n, _ in theirs[f".nv.info.{name}"]]
        for n, val in theirs[f".nv.info.{name}"]:
            if n in ("EIATTR_COOP_GROUP_INSTR_OFFSETS", "EIATTR_INT_WARP_WIDE_INSTR_OFFSETS"):
                for v in val.split():
                    assert n[len("EIATTR_"):] in k.pinned[int(v, 16)]
                    seen.add(n)
        for off, why in k.pinned.items():
            if "MBARRIER_INSTR_OFFSETS" in why:  # cuobjdump prints no value for it: the SASS must agree
                assert listings[name].at(off).base == "SYNCS"
                seen.add("MBARRIER")
    assert seen == {"EIATTR_COOP_GROUP_INSTR_OFFSETS", "EIATTR_INT_WARP_WIDE_INSTR_OFFSETS", "MBARRIER"}


def test_extract_finds_the_cubin_inside_a_fatbin(sync_cubin):
    cubin = Cubin.read(sync_cubin / "k.cubin")
    found = [Cubin.from_bytes(e) for e in extract((sync_cubin / "k.fatbin").read_bytes())]
    assert any(set(f.kernels) == set(cubin.kernels) and all(f.text(k) == cubin.text(k) for k in cubin.kernels)
               for f in found)
    assert extract(cubin.data) == [cubin.data]


def test_an_unknown_nv_info_record_makes_the_kernel_unpatchable(unrolled):
    c, listing = unrolled
    data = bytearray(c.data)
    info = next(s for s in c.sections if s.name == ".nv.info.sm80_hgemm")
    assert data[info.offset] == 0x04 and data[info.offset + 1] == 0x37   # CUDA_API_VERSION, SVAL
    data[info.offset + 1] = 0x7E                                          # a code nobody knows
    k = Cubin.from_bytes(bytes(data)).kernels["sm80_hgemm"]
    assert k.unknown and "0x7e" in k.unknown[0]
    harmless = next(i for i in range(len(listing.instrs) - 1) if Checker(listing, c.kernels["sm80_hgemm"]).swap(i))
    v = Checker(listing, k).swap(harmless)
    assert not v and "cannot vouch" in v.reason


# --- disasm --------------------------------------------------------------------------------


def test_disassembly_matches_the_bytes_and_decodes_control_fields(unrolled):
    c, listing = unrolled
    words = c.words("sm80_hgemm")
    assert len(listing.instrs) <= len(words)
    assert all(ins.word == words[ins.index] for ins in listing.instrs)   # disassemble() checks it too
    first = listing.instrs[0]
    assert first.text == "LDC R1, c[0x0][0x28]" and first.ctrl == Control(1, 1, None, None, 0, 0)
    # hand-decoded from nvdisasm -hex: 0x000e620000002500 (high word of S2R R7, SR_CTAID.X)
    assert listing.instrs[1].ctrl == Control(stall=1, yield_=1, wbar=1, rbar=None, wait=0, reuse=0)
    assert all(w[8:] == clear_reuse(w)[8:] or Control.from_word(w).reuse for w in words)


def test_life_ranges_know_operand_widths_and_explain_every_named_register(looped):
    _, listing, listings = looped
    hmma = next(i for i in listing.instrs if i.opcode == "HMMA.16816.F32")
    d, a, b, acc = (int(x.split(".")[0][1:]) for x in hmma.operands)
    assert {f"R{d + j}" for j in range(4)} <= hmma.writes
    assert {f"R{a + j}" for j in range(4)} | {f"R{b + j}" for j in range(2)} <= hmma.reads
    ldsm = next(i for i in listing.instrs if i.opcode == "LDSM.16.M88.4")
    base = int(ldsm.operands[0][1:])
    assert ldsm.writes >= {f"R{base + j}" for j in range(4)}
    for lst in listings.values():
        assert all(not ins.unexplained() for ins in lst.instrs)
        # every register of a wide result is marked written
        for ins in lst.instrs:
            m = re.match(r"(U?R)(\d+)$", ins.operands[0].split(".")[0]) if ins.operands else None
            wide = 4 if ".128" in ins.opcode else 2 if ".64" in ins.opcode or ".WIDE" in ins.opcode else 0
            if m and wide and not ins.base.startswith("ST"):
                assert {f"{m.group(1)}{int(m.group(2)) + j}" for j in range(wide)} <= ins.writes, str(ins)


def test_life_ranges_mark_a_dead_half_of_a_wide_result(sync_cubin):
    # mbarrier.arrive returns a 64-bit state in R2:R3 of which only R3 is used later (nvdisasm's own
    # table shows R2 dead right after): the write of R2 must still be seen, or a move could clobber
    listing = disasm.disassemble((sync_cubin / "k.cubin").read_bytes())["mbar"]
    arrive = next(i for i in listing.instrs if i.opcode.startswith("SYNCS.ARRIVE"))
    base = int(arrive.operands[0][1:])
    assert {f"R{base}", f"R{base + 1}"} <= arrive.writes
    rest = listing.instrs[arrive.index + 1:]
    redefined = next(k for k, i in enumerate(rest) if f"R{base}" in i.writes)
    assert not any(f"R{base}" in i.reads for i in rest[:redefined + 1])


def test_blocks_refine_nvdisasm_bbcfg_and_end_at_every_branch_and_exit(looped):
    c, listing, listings = looped
    theirs = disasm.bbcfg_starts(c.data)
    for name, lst in listings.items():
        mine = {lst.instrs[b.first].offset for b in lst.blocks}
        assert theirs[name] <= mine
        for b in lst.blocks:
            inner = [lst.instrs[i] for i in range(b.first, b.last)]
            assert not any(i.base in disasm.CONTROL_FLOW for i in inner)
            assert not any(lst.instrs[i].labels for i in range(b.first + 1, b.last + 1))
    loop = [b for b in listing.blocks if b.index in b.succs]
    assert loop, "the main loop branches back to itself"


# --- legality ------------------------------------------------------------------------------


def test_checker_rejects_a_register_dependency(unrolled):
    c, listing = unrolled
    ch = Checker(listing, c.kernels["sm80_hgemm"])
    i = next(i for i, x in enumerate(listing.instrs[:-1])
             if x.writes & listing.instrs[i + 1].reads and not ch.pinned(i) and not ch.pinned(i + 1))
    v = ch.swap(i)
    assert not v and "RAW" in v.reason


def test_checker_rejects_a_wait_moved_above_its_scoreboard_setter(looped):
    c, listing, _ = looped
    ch = Checker(listing, c.kernels["sm80_hgemm"])
    pairs = [(s, w) for b in listing.blocks for s in b.indices for w in range(s + 1, b.last + 1)
             if listing.instrs[s].ctrl.sets & listing.instrs[w].ctrl.waits and not ch.pinned(s) and not ch.pinned(w)]
    # prefer a waiter that does not read the setter's registers: then only the scoreboard forbids it
    pure = [(s, w) for s, w in pairs if not (listing.instrs[s].writes & listing.instrs[w].reads)]
    s, w = (pure or pairs)[0]
    v = ch.check(listing.block_of(w), moved(listing.block_of(w), w, s))
    assert not v and re.search(r"scoreboard setter/waiter|guarded by the wait|variable latency", v.reason)
    adjacent = [(s, w) for s, w in pairs if w == s + 1]
    assert adjacent
    s, w = adjacent[0]
    v = ch.swap(s)
    assert not v and "scoreboard setter/waiter SB" in v.reason


def test_checker_keeps_a_load_without_scoreboard_above_the_load_whose_wait_covers_it(looped):
    c, listing, _ = looped
    ch = Checker(listing, c.kernels["sm80_hgemm"])
    for b in listing.blocks:
        for i in b.indices:
            x = listing.instrs[i]
            if x.base == "LDSM" and x.ctrl.wbar is None:
                cover = next(j for j in range(i + 1, b.last + 1) if listing.instrs[j].ctrl.wbar is not None)
                v = ch.check(b, moved(b, i, cover))
                assert not v and "variable latency" in v.reason
                return
    pytest.skip("no LDSM without a write scoreboard in this kernel")


def test_checker_never_moves_or_crosses_a_pinned_instruction(looped):
    c, listing, _ = looped
    ch = Checker(listing, c.kernels["sm80_hgemm"])
    bar = next(i for i in listing.instrs if i.base == "BAR")
    b = listing.block_of(bar.index)
    v = ch.swap(bar.index)
    assert not v and "moves pinned" in v.reason and "barrier" in v.reason
    above = next(i for i in range(bar.index - 1, b.first - 1, -1) if not ch.pinned(i))
    below = next(i for i in range(bar.index + 1, b.last + 1) if not ch.pinned(i))
    order = list(b.indices)                           # the two trade places; the BAR stays put
    order[above - b.first], order[below - b.first] = below, above
    v = ch.check(b, order)
    assert not v and "crosses pinned" in v.reason and "BAR" in v.reason
    exit_ = next(i for i in listing.instrs if i.base == "EXIT" and not i.pred)
    v = ch.swap(exit_.index - 1)
    assert not v and "EXIT_INSTR_OFFSETS" in v.reason
    assert ch.pinned(exit_.index) and "EXIT_INSTR_OFFSETS" in ch.pinned(exit_.index)
    assert not ch.check(b, list(b.indices)[::-1])
    assert not ch.check(b, list(b.indices)[1:])      # not a permutation


def test_checker_keeps_a_toucher_of_a_register_pending_from_another_block_below_the_waits(looped):
    c, listing, _ = looped
    ch = Checker(listing, c.kernels["sm80_hgemm"])
    # e.g. the loop's first HMMA reads what the previous iteration's LDSMs wrote: the wait that
    # guards it sits in the loop block, and nothing inside the block links the two otherwise
    found = []
    for b in listing.blocks:
        rules = ch.rules(b)
        found += [a for (a, z), why in rules.order_edges.items()
                  if z == a + 1 and all("from another block" in w for w in why)]
    assert found
    v = ch.swap(found[0])
    assert not v and "from another block" in v.reason


def test_checker_keeps_stall_distances_until_a_latency_table_exists(unrolled):
    c, listing = unrolled
    strict = Checker(listing, c.kernels["sm80_hgemm"])
    capped = Checker(listing, c.kernels["sm80_hgemm"], max_latency=32)
    ins = listing.instrs
    pairs = [i for i in range(len(ins) - 1) if ins[i].base in isa.FIXED and ins[i + 1].base in isa.FIXED
             and not (ins[i].writes & (ins[i + 1].reads | ins[i + 1].writes)) and not (ins[i].reads & ins[i + 1].writes)
             and not ins[i].ctrl.wait and not ins[i + 1].ctrl.wait]
    assert pairs
    # two independent integer ops: moving a producer nearer its first reader is refused...
    assert all("stall distance" in strict.swap(i).reason for i in pairs if not strict.swap(i))
    assert not any(strict.swap(i) for i in pairs)
    # ...unless a measured latency bound says the shorter distance still covers it
    assert any(capped.swap(i) for i in pairs)


PROLOGUE = SHIPPED / "128x64x128-sm80-db904d0e5c.cubin"


def test_checker_keeps_two_cycles_between_a_scoreboard_setter_and_its_waiter():
    # On the H100 (eval/results/sass_audit_h100_2026-11-23.json) every schedule that put this
    # kernel's `USHF.L.U32 UR4, UR4, ...` (waiting on SB2) one stall cycle after `S2UR UR4,
    # SR_CTAID.Y` (setting SB2) faulted with an illegal address: the wait passed before the
    # scoreboard was armed and the shift read a stale UR4. Order and registers allow the move.
    c = Cubin.read(PROLOGUE)
    listing = disasm.disassemble(c)["sm80_hgemm"]
    ch = Checker(listing, c.kernels["sm80_hgemm"])
    ins, b = listing.instrs, listing.blocks[0]
    s2ur = next(i for i in b.indices if ins[i].text.startswith("S2UR UR4"))
    ushf = next(i for i in b.indices if ins[i].text.startswith("USHF.L.U32 UR4, UR4"))
    assert ins[s2ur].ctrl.sets & ins[ushf].ctrl.waits and ins[s2ur].ctrl.stall == 1
    order = [i for i in b.indices if i != ushf]
    order.insert(order.index(s2ur) + 1, ushf)      # the wait at once after its setter
    v = ch.check(b, order)
    assert not v and "armed too late" in v.reason


def _oracle(listing, block, order, cap):
    """What a legal order must preserve, computed from sequences rather than the checker's edges:
    each read sees the same writer, each register ends with the same writer, each wait follows
    the same setters, variable-latency instructions keep their sequence, and each fixed-latency
    result is at least min(old, cap) cycles from its first reader."""
    ins = listing.instrs

    def view(seq):
        last, seen_by, setters, var, pos, acc = {}, {}, {}, [], {}, 0
        for i in seq:
            x = ins[i]
            pos[i] = acc
            acc += x.ctrl.stall
            seen_by[i] = {r: last.get(r) for r in x.reads}
            for b in x.ctrl.waits:
                seen_by[(i, b)] = frozenset(setters.get(b, ()))
            for b in x.ctrl.sets:
                setters.setdefault(b, set()).add(i)
            if isa.classify(x).variable:
                var.append(i)
            for r in x.writes:
                last[r] = i
        return last, seen_by, var, pos

    old, new = view(list(block.indices)), view(order)
    assert old[0] == new[0] and old[1] == new[1] and old[2] == new[2]
    for p in block.indices:
        if ins[p].ctrl.wbar is None and ins[p].writes:
            readers = [c for c in block.indices if c > p and ins[p].writes & ins[c].reads and new[1][c] and
                       any(new[1][c].get(r) == p for r in ins[p].writes)]
            if readers:
                c = readers[0]
                assert new[3][c] - new[3][p] >= min(old[3][c] - old[3][p], cap)
    for w in block.indices:   # a wait issued too soon after its scoreboard's setter passes early
        for sb in ins[w].ctrl.waits:
            for p in block.indices:
                if p < w and sb in ins[p].ctrl.sets:
                    assert new[3][w] - new[3][p] >= min(old[3][w] - old[3][p], 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_legal_walks_preserve_what_the_rules_promise(looped, seed):
    import random

    c, listing, _ = looped
    cap = 32
    ch = Checker(listing, c.kernels["sm80_hgemm"], max_latency=cap)
    rng = random.Random(seed)
    blocks = [b for b in listing.blocks if len(b) > 8]
    accepted = 0
    for b in blocks:
        order = list(b.indices)
        for _ in range(600):
            k = rng.randrange(len(order) - 1)
            trial = order[:k] + [order[k + 1], order[k]] + order[k + 2:]
            if ch.check(b, trial):
                order = trial
                accepted += 1
        _oracle(listing, b, order, cap)
    assert accepted > 20


def test_checker_accepts_a_harmless_swap(unrolled):
    c, listing = unrolled
    ch = Checker(listing, c.kernels["sm80_hgemm"])
    # S2R (results behind a scoreboard) and an IMAD.MOV of a constant: nothing links them
    s2r, mov = listing.instrs[1], listing.instrs[2]
    assert s2r.opcode == "S2R" and s2r.ctrl.wbar is not None and mov.opcode == "IMAD.MOV.U32"
    assert mov.reads == frozenset() and not mov.ctrl.wait
    assert ch.swap(1)


# --- patch ---------------------------------------------------------------------------------


def test_identity_patch_is_byte_identical(looped):
    c, listing, _ = looped
    for b in listing.blocks:
        assert patch.permute(c, listing, b, list(b.indices)) == c.data


def test_patched_cubin_disassembles_to_the_intended_order(looped):
    c, listing, _ = looped
    ch = Checker(listing, c.kernels["sm80_hgemm"])
    legal = [i for i in range(len(listing.instrs) - 1) if ch.swap(i)]
    assert legal
    # two legal swaps in one block (or one), applied as one permutation, checked as a whole
    b = listing.block_of(legal[-1])
    order = swapped(b, legal[-1])
    others = [i for i in legal if listing.block_of(i) is b and i + 1 < legal[-1]]
    if others:
        k = others[0] - b.first
        order[k], order[k + 1] = order[k + 1], order[k]
    assert ch.check(b, order)
    new = patch.permute(c, listing, b, order)
    assert new != c.data and len(new) == len(c.data)
    newc = Cubin.from_bytes(new)
    assert patch.is_permutation_of(newc.text("sm80_hgemm"), c.text("sm80_hgemm"))
    assert all(newc.text(k) == c.text(k) for k in c.kernels if k != "sm80_hgemm")
    after = disasm.disassemble(new)["sm80_hgemm"]
    want = [strip_reuse(i.text) for i in listing.instrs]
    want[b.first:b.last + 1] = [strip_reuse(listing.instrs[i].text) for i in order]
    assert [strip_reuse(i.text) for i in after.instrs] == want
    for pos, old in zip(b.indices, order):   # each word moved whole, control code included
        o, n = listing.instrs[old].ctrl, after.instrs[pos].ctrl
        assert replace(o, reuse=0) == replace(n, reuse=0)


def test_patch_clears_reuse_flags_only_where_a_neighbour_changed(looped):
    c, listing, _ = looped
    ins = listing.instrs
    # an instruction with reuse flags whose next two instructions can be swapped mechanically
    j = next(j for j in range(len(ins) - 3) if ins[j].ctrl.reuse and listing.block_of(j).last >= j + 3
             and listing.block_of(j) is listing.block_of(j + 3)
             and not any(isa.classify(ins[x]).pc_relative for x in (j + 1, j + 2)))
    b = listing.block_of(j)
    new = Cubin.from_bytes(patch.permute(c, listing, b, swapped(b, j + 1))).words("sm80_hgemm")
    old = c.words("sm80_hgemm")
    assert new[j] == clear_reuse(old[j]) != old[j]            # its successor changed
    assert new[j + 1] == clear_reuse(old[j + 2]) and new[j + 2] == clear_reuse(old[j + 1])
    assert new[j + 3] == clear_reuse(old[j + 3])               # its predecessor changed
    assert new[:j] == old[:j] and new[j + 4:] == old[j + 4:]


def test_patch_refuses_pc_relative_and_recorded_offsets(looped):
    c, listing, _ = looped
    bra = next(i for i in listing.instrs if i.base == "BRA" and i.index > listing.block_of(i.index).first)
    b = listing.block_of(bra.index)
    with pytest.raises(patch.PatchError, match="PC-relative"):
        patch.permute(c, listing, b, swapped(b, bra.index - 1))
    ex = next(i for i in listing.instrs if i.base == "EXIT" and i.index > listing.block_of(i.index).first)
    b = listing.block_of(ex.index)
    with pytest.raises(patch.PatchError, match="EXIT_INSTR_OFFSETS"):
        patch.permute(c, listing, b, swapped(b, ex.index - 1))
    with pytest.raises(patch.PatchError, match="permutation"):
        patch.permute(c, listing, b, list(b.indices)[:-1])


# --- a fresh sm80 render -------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_fresh_sm80_render_extracts_disassembles_and_round_trips(tmp_path):
    from cudal2.config import BuildConfig
    from cudal2.harness.build import build
    from cudal2.kernels.sm80 import Sm80
    from cudal2.problem import Problem

    params = dict(BM=64, BN=64, BK=32, WARPS_M=2, WARPS_N=2, STAGES=3, GROUP_M=4, SPLIT_K=1)
    r = build(Sm80().render(params, Problem(257, 136, 1032)), BuildConfig(cache_dir=str(tmp_path)))
    assert r.ok and r.kind == "cubin", r.reason
    data = Path(r.lib_path).read_bytes()
    (cub,) = extract(data)
    c = Cubin.from_bytes(cub)
    listing = disasm.disassemble(c)["sm80_hgemm"]
    ch = Checker(listing, c.kernels["sm80_hgemm"])
    assert any(i.base == "HMMA" for i in listing.instrs) and any(i.base == "LDGSTS" for i in listing.instrs)
    assert all(patch.permute(c, listing, b, list(b.indices)) == data for b in listing.blocks)
    assert sum(1 for i in range(len(listing.instrs)) if ch.pinned(i)) > 0
