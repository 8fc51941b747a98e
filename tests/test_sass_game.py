"""cudal2.sass.game and cudal2.sass.agents on real compiled kernels, CPU only: the action mask is
the checker's verdict in every state the game reaches, moves the mask refuses are refused,
features follow the state, measurements are cached and counted, a GPU refusal is counted and
ends an episode, an agent run (greedy, anneal, PPO) returns a legal order whose patched cubin
disassembles to it, and PPO's policy learns a preference it can see.

The reward here comes from TEST DOUBLES: `fake_measure`, a deterministic function of the patched
bytes (an arbitrary fixed preference), and in the PPO test a preference for variable-latency
instructions moved up. They stand in for the GPU timing of `sass.verify` and exist only in
these tests."""

import json
import random
import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest

from cudal2.sass import agents, disasm, tools
from cudal2.sass.cubin import Cubin
from cudal2.sass.disasm import clear_reuse
from cudal2.sass.game import FEATURES, LATENCY_H100, Game, IllegalMove, Rejected, latency, replay
from cudal2.sass.legality import Checker

pytestmark = pytest.mark.skipif(tools.find("nvdisasm") is None or tools.find("cuobjdump") is None,
                                reason="nvdisasm/cuobjdump missing (pip install nvidia-cuda-nvdisasm==13.2.* "
                                       "nvidia-cuda-cuobjdump==13.2.*)")

ROOT = Path(__file__).parent.parent
LOOPED = ROOT / "kernels_out" / "sm90" / "128x64x12288-sm80-fe873ae88d.cubin"   # cp.async/ldmatrix/mma loop
LATENCY_JSON = ROOT / "eval" / "results" / "sass_latency_h100_2026-11-23.json"


def fake_measure_for(cubin: bytes, kernel: str = "sm80_hgemm"):
    """TEST DOUBLE for the GPU measure: an arbitrary but fixed preference read off the patched
    bytes. Each instruction word (reuse flags cleared) is 'early' or 'late' by the parity of its
    CRC32; the gain is 0.1% per slot an early word moved up or a late word moved down. 0.0 for the
    original; deterministic; about half of all legal swaps improve it; knows nothing of legality."""
    n = len(disasm.disassemble(cubin)[kernel].instrs)
    sign = lambda w: 1 if zlib.crc32(clear_reuse(w)) & 1 else -1  # noqa: E731

    def score(data: bytes) -> float:
        return -sum(p * sign(w) for p, w in enumerate(Cubin.from_bytes(data).words(kernel)[:n]))

    base = score(cubin)

    def fake_measure(data: bytes) -> float:
        return 0.001 * (score(data) - base)
    return fake_measure


@pytest.fixture(scope="module")
def looped() -> bytes:
    return LOOPED.read_bytes()


@pytest.fixture(scope="module")
def fresh_sm80(tmp_path_factory) -> bytes:
    """A fresh sm80 render at a shape with tails in M, N and K, compiled by nvcc here."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    from cudal2.config import BuildConfig
    from cudal2.harness.build import build
    from cudal2.kernels.sm80 import Sm80
    from cudal2.problem import Problem
    params = dict(BM=64, BN=64, BK=32, WARPS_M=2, WARPS_N=2, STAGES=3, GROUP_M=4, SPLIT_K=1)
    r = build(Sm80().render(params, Problem(257, 136, 1032)),
              BuildConfig(cache_dir=str(tmp_path_factory.mktemp("cache"))))
    assert r.ok and r.kind == "cubin", r.reason
    return Path(r.lib_path).read_bytes()


def checker_mask(game: Game) -> np.ndarray:
    """The mask recomputed from scratch: a fresh Checker on each adjacent swap of the current order."""
    ch = Checker(game.listing, game.cub.kernels[game.kernel], game.checker.max_latency if
                 game.checker.max_latency != float("inf") else None)
    m = np.zeros(2 * game.n, dtype=bool)
    for b in game.listing.blocks:
        order = game.order(b.index)
        for k in range(len(order) - 1):
            trial = order[:k] + [order[k + 1], order[k]] + order[k + 2:]
            ok = bool(ch.check(b, trial))
            m[2 * (b.first + k) + 1] = m[2 * (b.first + k + 1)] = ok
    return m


@pytest.mark.parametrize("seed", [0, 1])
def test_mask_is_the_checkers_verdict_in_every_state_reached(fresh_sm80, seed):
    game = Game(fresh_sm80, lambda b: 0.0, max_latency=32)
    rng = random.Random(seed)
    for _ in range(12):
        m = game.mask()
        assert (m == checker_mask(game)).all()
        legal = np.flatnonzero(m)
        assert len(legal)
        game.apply(int(rng.choice(legal)))
    assert game.displaced() > 0
    for bi, order in game.orders().items():   # the state itself is one the checker accepts
        assert Checker(game.listing, game.cub.kernels[game.kernel], 32).check(bi, order)


def test_apply_refuses_what_the_mask_refuses_and_leaves_the_state(looped):
    game = Game(looped, lambda b: 0.0)
    m = game.mask()
    illegal = [a for a in range(game.n_actions) if not m[a]]
    first_block_up = 2 * game.listing.blocks[1].first          # up out of its block
    assert first_block_up in illegal
    before = list(game.layout)
    for a in [first_block_up, illegal[len(illegal) // 2], -1, game.n_actions]:
        with pytest.raises(IllegalMove):
            game.apply(a)
    assert game.layout == before and game.orders() == {}


def test_features_have_one_row_per_instruction_and_follow_the_state(looped):
    game = Game(looped, lambda b: 0.0, max_latency=32)
    F = {n: j for j, n in enumerate(FEATURES)}
    x = game.features()
    assert x.shape == (game.n, len(FEATURES)) and np.isfinite(x).all() and (np.abs(x) <= 1).all()
    assert (x[:, F["movable"]] == [game.checker.pinned(i) is None for i in range(game.n)]).all()
    assert (x[:, [F[f"class_{c}"] for c in ("alu", "fp", "tensor", "uniform", "load_global", "load_shared",
                                             "async_copy", "store", "variable", "control")]].sum(1) == 1).all()
    m = game.mask()
    assert (x[:, F["can_move_down"]] == m[1::2]).all() and (x[:, F["can_move_up"]] == m[0::2]).all()
    a = game.legal_swaps()[0]
    p = a // 2
    game.apply(a)
    y = game.features()
    for col in ("stall", "latency_cycles", "movable", "class_tensor", "sets_write_sb"):
        assert y[p, F[col]] == x[p + 1, F[col]] and y[p + 1, F[col]] == x[p, F[col]]
    assert y[p, F["displacement"]] < 0 < y[p + 1, F["displacement"]]


def test_latency_table_is_the_measured_one_and_lookup_generalises(looped):
    if LATENCY_JSON.exists():
        measured = json.loads(LATENCY_JSON.read_text())["table"]
        assert LATENCY_H100 == {k: v["cycles_per_link"] for k, v in measured.items() if v["trusted"]}
    listing = disasm.disassemble(looped)["sm80_hgemm"]
    by_op = {i.opcode: i for i in listing.instrs}
    assert latency(by_op["HMMA.16816.F32"]) == LATENCY_H100["HMMA.16816.F32"]
    imad = next(i for op, i in by_op.items() if op.startswith("IMAD.") and op != "IMAD")
    assert latency(imad) == LATENCY_H100["IMAD"]
    assert latency(next(i for op, i in by_op.items() if op.startswith("LDSM"))) is None   # not measured
    assert latency(next(i for i in listing.instrs if i.base == "LDS")) == LATENCY_H100["LDS"]


def test_measurements_are_cached_per_schedule_and_fresh_ones_are_counted(looped):
    calls = []
    game = Game(looped, lambda b: calls.append(b) or 0.02)
    assert game.evaluate() == 0.0 and not calls                 # the original is never measured
    game.apply(game.legal_swaps()[0])
    assert game.evaluate() == 0.02 and game.evaluate() == 0.02
    assert len(calls) == 1 and game.stats.cache_hits == 1
    game.evaluate(fresh=True)
    assert len(calls) == 2 and game.stats.measured == 2 and calls[0] == calls[1] == game.cubin()


def test_a_gpu_refusal_is_counted_and_ends_the_episode(looped):
    def refusing(_):
        raise Rejected("outputs differ (test)")
    game = Game(looped, refusing)
    _, reward, done, info = game.step(game.legal_swaps()[0])
    assert reward == -1.0 and done and info["gpu_failed"]
    assert game.stats.gpu_failed == 1 and game.stats.measured == 1


@pytest.mark.parametrize("agent", ["greedy", "anneal", "ppo"])
def test_agent_returns_a_legal_order_whose_patched_cubin_disassembles_to_it(looped, agent):
    game = Game(looped, fake_measure_for(looped), max_latency=32)
    budget = agents.Budget(measurements=40)
    r = agents.AGENTS[agent](game, budget, min_gain=0.001, seed=3)
    assert r.orders and r.gain > 0 and r.reproduced and r.gain_repeat == pytest.approx(r.gain)
    assert r.stats["measured"] <= budget.measurements + 3 and r.stats["rejected"] > 0
    assert r.stats["gpu_failed"] == 0
    ch = Checker(game.listing, game.cub.kernels[game.kernel], 32)
    assert all(ch.check(bi, order) for bi, order in r.orders.items())
    data = game.cubin()
    after = disasm.disassemble(data)[game.kernel]
    want = list(range(game.n))
    for bi, order in r.orders.items():
        b = game.listing.blocks[bi]
        want[b.first:b.last + 1] = order
    strip = lambda t: t.replace(".reuse", "")  # noqa: E731
    assert [strip(i.text) for i in after.instrs] == [strip(game.listing.instrs[i].text) for i in want]
    assert replay(looped, game.kernel, {str(k): v for k, v in r.orders.items()}, max_latency=32) == data


def test_no_gain_means_no_schedule(looped):
    game = Game(looped, lambda b: 0.0)
    r = agents.greedy(game, agents.Budget(measurements=10), min_gain=0.01)
    assert r.orders == {} and not r.reproduced and r.gain_repeat is None and game.cubin() == looped


def test_replay_refuses_an_illegal_schedule(looped):
    game = Game(looped, lambda b: 0.0)
    b = next(b for b in game.listing.blocks if len(b) > 4)
    with pytest.raises(IllegalMove):
        replay(looped, game.kernel, {b.index: list(b.indices)[::-1]})


def test_ppo_learns_to_pick_moves_that_pay(looped):
    # TEST DOUBLE for the GPU measure, one a policy can learn from its features: 0.1% per slot a
    # variable-latency instruction moved up (per slot down: -0.1%). A random legal move averages
    # about 0; PPO's later batches must pay more than its first ones, and more than nothing.
    game = Game(looped, None, max_latency=32)
    variable = [c.variable for c in game.checker.cls]
    game.measure = lambda _: 0.001 * sum(i - p for p, i in enumerate(game.layout) if variable[i])
    curve = []
    agents.AGENTS["ppo"](game, agents.Budget(measurements=300), min_gain=0.001, seed=0,
                         on_update=lambda k, r: curve.append(r))
    assert len(curve) >= 8
    first, last = sum(curve[:3]) / 3, sum(curve[-3:]) / 3
    assert last > 0.0002 and last > first + 0.0002
