"""Review 40: candidate input that stopped the reward service or stalled it in the machine-code
rules (see each test)."""

import functools
import re
import time

import pytest

from cudal2.harness import constbank
from cudal2.harness.build import build
from cudal2.sass import disasm, tools

from .conftest import BAD, KERNELS

# The regexes the linear scanners replaced, kept here as the oracles they must agree with.
_FENCE = re.compile(r"```([\w+-]*)[^\n]*\n(.*?)```", re.S)
_LAUNCH_BLOCK = re.compile(r"/\*\s*cudal2-launch\b(.*?)\*/", re.S)
_EDIT_BLOCK = re.compile(r"<<<<<<< SEARCH\n(.*?)\n?=======\n(.*?)\n?>>>>>>> REPLACE", re.S)


def _sleeper(tmp_path):
    """A stand-in for nvdisasm that never answers in time."""
    exe = tmp_path / "nvdisasm"
    exe.write_text("#!/bin/sh\nsleep 30\n")
    exe.chmod(0o755)
    return str(exe)


def test_a_tool_past_its_timeout_is_a_tool_failure_not_an_exception(tmp_path, monkeypatch):
    # subprocess.TimeoutExpired is no OSError and no ToolFailed: no rule's `except UNREADABLE` saw it
    monkeypatch.setattr(tools, "require", lambda name: _sleeper(tmp_path))
    t0 = time.monotonic()
    with pytest.raises(tools.ToolFailed, match=tools.TIMED_OUT):
        tools.run("nvdisasm", ["x.cubin"], timeout=0.5)
    assert time.monotonic() - t0 < 10


@pytest.mark.timeout(120)
def test_a_disassembler_past_its_timeout_refuses_the_build_uncached(cfg, tmp_path, monkeypatch):
    src = (KERNELS / "good" / "naive_v2.cu").read_text()
    assert build(src, cfg.build).ok
    cfg.build.cache_dir = str(tmp_path / "other-cache")   # a fresh build, not the cached verdict
    monkeypatch.setattr(tools, "require", lambda name: _sleeper(tmp_path))
    monkeypatch.setattr(tools, "run", functools.partial(tools.run, timeout=0.5))
    r = build(src, cfg.build)   # before: subprocess.TimeoutExpired out of build()
    assert not r.ok and r.stage == "build" and tools.TIMED_OUT in r.reason
    assert not (tmp_path / "other-cache" / r.key).exists()   # a busy machine's refusal is not kept


def test_a_cubin_past_max_words_is_refused_before_nvdisasm_runs(cfg, monkeypatch):
    r = build((KERNELS / "good" / "naive_v2.cu").read_text(), cfg.build)
    assert r.ok
    words = sum(k.text.size for k in disasm.Cubin.read(r.lib_path).kernels.values()) // disasm.WORD

    def never(*a, **k):
        raise AssertionError("nvdisasm ran on a cubin past the cap")
    monkeypatch.setattr(tools, "run", never)
    monkeypatch.setattr(disasm, "MAX_WORDS", words - 1)
    with pytest.raises(disasm.DisasmError, match="instruction words"):
        disasm.disassemble(open(r.lib_path, "rb").read())
    assert any("instruction words" in b for b in constbank.violations(r.lib_path))


@pytest.mark.timeout(300)
def test_the_superlinear_listing_kernel_fails_the_build_within_seconds(cfg):
    # before: nvdisasm -plr ran ~4 minutes on its 65,568 words, was killed at 60 s, and
    # subprocess.TimeoutExpired came out of build() (and build_many, and RewardService.score)
    t0 = time.monotonic()
    r = build((BAD / "zz40_nvdisasm_superlinear.cu").read_text(), cfg.build)
    assert not r.ok and r.stage == "build" and "instruction words" in r.reason
    assert time.monotonic() - t0 < 60


# --- sassdesc: what a call may write, in time linear in the code -------------------------------

def _call_chain(n: int, deepest: str) -> list[str]:
    """A kernel that loads the driver's descriptor, calls f0, and uses it; f_i calls f_(i+1), and
    the last one runs `deepest`: n subroutines in the kernel's section, as ptxas lays out
    __noinline__ functions."""
    rows = ["ULDC.64 UR4, c[0x0][0x208]", "CALL.REL.NOINC `(f0)", "LDG.E R0, desc[UR4][R2.64]", "EXIT"]
    for i in range(n):
        rows += [f"f{i}:", f"MOV R{3 + i % 8}, 0x{i:x}", f"IADD3 R12, R12, 0x{i:x}, RZ"]
        rows += [f"CALL.REL.NOINC `(f{i + 1})"] if i + 1 < n else [deepest]
        rows += ["RET.REL.NODEC R2 `(k)"]
    return rows


def _check(rows):
    from cudal2.harness import sassdesc

    from .listings import listing
    return sassdesc.check({"k": listing(*rows, infer=True)})


@pytest.mark.timeout(120)
def test_a_long_call_chain_is_checked_in_linear_time():
    # the clobbers were one search per callee over everything it reaches: 900 chained __noinline__
    # functions (15,065 instructions, under MAX_WORDS) took 73 s; 1,500 here took minutes
    t0 = time.monotonic()
    assert _check(_call_chain(1500, "MOV R3, 0x1")) == []
    assert time.monotonic() - t0 < 20


def test_what_the_deepest_callee_writes_is_forgotten_at_the_first_call():
    # the same answer as the search: a write anywhere down the chain clobbers the caller's pair
    bad = _check(_call_chain(40, "UMOV UR5, 0x1"))
    assert bad and "UR4:UR5" in bad[0], bad
    assert _check(_call_chain(40, "UMOV UR6, 0x1")) == []


# --- the completion parser: linear in the completion -------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", ["```" + "a" * 256_000, "```" * 80_000, "```\n" + "``" * 120_000])
def test_the_fence_parser_is_linear_in_the_completion(text):
    # the fence regex backtracked over a long tag word (64,000 characters 5 s, 128,000 15 s) and
    # rescanned from every unclosed opening (20,000 of them 2.6 s): quadratic
    from cudal2.llm.parse import ParseError, candidate_source
    t0 = time.monotonic()
    with pytest.raises(ParseError):
        candidate_source(text, "full", None)
    assert time.monotonic() - t0 < 5


def test_the_fence_parser_reads_what_the_regex_read():
    import random

    from cudal2.llm import parse
    rng = random.Random(40)
    parts = ["`", "``", "```", "\n", "cuda", "c++", " x", "-", "a", "*/", "```cuda\n", "````"]
    for _ in range(5000):
        t = "".join(rng.choice(parts) for _ in range(rng.randint(0, 30)))
        assert parse._fences(t) == _FENCE.findall(t), repr(t)


# --- paramflow: returns reach the places after calls through one join --------------------------

def _returns(n: int, callee: str = "") -> list[str]:
    rows = ["ULDC.64 UR6, c[0x0][0x198]", "ULDC.64 UR4, c[0x0][0x208]"]
    rows += [f"CALL.REL.NOINC `(f{i})" for i in range(n)]
    rows += ["UTMAPF [UR6]", "LDG.E R0, desc[UR4][R2.64]", "EXIT"]
    for i in range(n):
        rows += [f"f{i}:"] + ([callee] if callee and i == n - 1 else []) + ["RET.REL.NODEC R2 `(k)"]
    return rows


@pytest.mark.timeout(120)
def test_many_calls_and_returns_are_followed_in_linear_time():
    # every RET had an edge to every place after a CALL: 5,400 of each (10,805 words, under
    # MAX_WORDS) took 17.6 s and 240 MB
    from cudal2.harness import paramflow

    from .listings import listing
    t0 = time.monotonic()
    assert paramflow.check({"k": listing(*_returns(5400), infer=True)}) == []
    assert time.monotonic() - t0 < 5


def test_what_a_callee_does_to_the_address_still_reaches_every_place_after_a_call():
    from cudal2.harness import paramflow

    from .listings import listing
    # the last callee moves the address into R4 and the caller stores R4 after its first call
    rows = _returns(30, "MOV R4, UR6")
    rows.insert(3, "STG.E desc[UR4][R2.64], R4")
    bad = paramflow.check({"k": listing(*rows, infer=True)})
    assert bad and "R4" in bad[0], bad
    # a callee that overwrites the descriptor's register: the TMA use after the calls is not sure
    bad = paramflow.check({"k": listing(*_returns(30, "UMOV UR6, 0x0"), infer=True)})
    assert any("TMA descriptor" in b for b in bad), bad


# --- sassdesc: the fixpoint's budget counts what its steps cost --------------------------------

def _shift_register(uniform: int, constants: int, pad: int) -> list[str]:
    """A loop that moves unknown bits one place a pass through `uniform` uniform registers (each
    takes the bit above 30 of the one before it), with `constants` registers holding a constant
    beside them and `pad` instructions before it: the known-bits lattice's height, walked a bit a
    pass, each step copying ~`uniform + constants` facts."""
    rows = ["ULDC.64 UR4, c[0x0][0x208]"] + [f"MOV R{10 + i}, 0x1" for i in range(constants)]
    rows += [f"UMOV UR{10 + j}, 0x0" for j in range(uniform)]
    rows += [f"IADD3 R{10 + constants}, R{10 + constants}, 0x1, RZ"] * pad
    rows += ["L:", "S2UR UR71, SR_CLOCKLO", "ULOP3.LUT UR10, UR10, UR71, URZ, 0x3c, !UPT"]
    for j in range(1, uniform):
        rows += [f"USHF.L.U32 UR{10 + j}, UR{10 + j}, 0x1, URZ", f"USHF.R.U32.HI UR72, URZ, 0x1e, UR{9 + j}",
                 f"ULOP3.LUT UR{10 + j}, UR{10 + j}, UR72, URZ, 0xfc, !UPT"]
    return rows + ["LDG.E R0, desc[UR4][R2.64]", "ISETP.NE.AND P0, PT, R0, RZ, PT", "@P0 BRA `(L)", "EXIT"]


@pytest.mark.timeout(180)
def test_a_slowly_settling_loop_is_refused_within_the_effort_budget():
    # before: 62 s to its fixpoint here (2,444 nodes; 444 nodes: 37 s to the step budget's refusal),
    # and the step budget grew with the nodes a cubin may hold
    t0 = time.monotonic()
    bad = _check(_shift_register(60, 200, 2000))
    assert bad and "did not settle" in bad[0], bad
    assert time.monotonic() - t0 < 25


def test_a_short_shift_register_still_settles_and_passes():
    assert _check(_shift_register(8, 50, 0)) == []


# --- the launch spec's block: found in linear time -----------------------------------------------

@pytest.mark.timeout(60)
def test_unclosed_launch_openings_are_read_in_linear_time():
    # the block regex rescanned from every unclosed opening: 128,000 characters 8.8 s
    from cudal2.harness import launch
    t0 = time.monotonic()
    assert launch.parse("/* cudal2-launch " * 30_000) is None
    assert time.monotonic() - t0 < 5


def test_the_launch_block_scanner_reads_what_the_regex_read():
    import random

    from cudal2.harness import launch
    rng = random.Random(40)
    parts = ["/*", "*/", "/", "*", " ", "\n", "cudal2-launch", "cudal2-launchx", "{}", "a", "/* cudal2-launch"]
    for _ in range(5000):
        t = "".join(rng.choice(parts) for _ in range(rng.randint(0, 25)))
        assert launch.blocks(t) == _LAUNCH_BLOCK.findall(t), repr(t)


# --- the completion parser's SEARCH/REPLACE blocks (the fences' twin) ------------------------

def test_the_edit_block_scanner_reads_what_the_regex_read():
    import random

    from cudal2.llm import parse
    rng = random.Random(40)
    parts = ["<<<<<<< SEARCH\n", "=======\n", ">>>>>>> REPLACE", "\n", "=======", "<<<<<<< SEARCH", "a", "x\n"]
    for _ in range(5000):
        t = "".join(rng.choice(parts) for _ in range(rng.randint(0, 25)))
        assert parse._edit_blocks(t) == _EDIT_BLOCK.findall(t), repr(t)


def test_unclosed_edit_blocks_are_read_in_linear_time():
    from cudal2.llm import parse
    text = "<<<<<<< SEARCH\n" * 8500   # the regex: 17 s on this CPU
    t0 = time.monotonic()
    with pytest.raises(parse.ParseError):
        parse.apply_edits("int x;", text)
    assert time.monotonic() - t0 < 1.0
