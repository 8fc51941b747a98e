"""Retrieval corpus, BM25 ranking, token budget, library neighbours and prompt rendering (CPU only)."""

import hashlib
import math
import warnings

import jinja2
import pytest

from cudal2.problem import Problem, parse_claim

from cudal2.config import Config
from cudal2.harness import policy
from cudal2.library import manifest
from cudal2.library.manifest import Entry
from cudal2.retrieval import corpus, render
from cudal2.retrieval.corpus import Chunk, log_shape_distance, make_chunk
from cudal2.retrieval.index import Retriever, tokenize


@pytest.fixture(scope="module")
def chunks():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # a family mid-edit elsewhere must not fail the ranking tests
        return corpus.build(None)


@pytest.fixture(scope="module")
def retriever(chunks):
    return Retriever(chunks, "")


def _entry(eid, M, N, K, score=1.0, m_range=None, source="k.cu", sha=""):
    return Entry(id=eid, M=M, N=N, K=K, family="sm90", params={"TILE_M": 128}, provenance={"kind": "template"},
                 source=source, source_sha256=sha, build={}, gpu={"name": "NVIDIA H100"},
                 measured={"score": score, "speedup": {"offline": {"cublas": score}},
                           "times_us": {"offline": {"candidate": 10.0, "cublas": 10.0 * score}}},
                 date="2026-11-22", m_range=m_range, binary="k.cubin", spec={"kernels": []},
                 device_sha256=hashlib.sha256(b"cubin").hexdigest())


# ---- ranking ------------------------------------------------------------------------------------

@pytest.mark.parametrize("query, note", [
    ("TMA tensor map 128B swizzle", "tma-tensor-maps"),
    ("split-K deterministic reduction workspace", "split-k-stream-k"),
    ("bank conflicts ldmatrix padding", "smem-bank-conflicts"),
    ("wave quantization 132 SMs tile count", "wave-quantization"),
    ("mbarrier expect_tx phase", "mbarrier-pipelines"),
    ("setmaxnreg producer consumer warpgroup", "warp-specialization"),
    ("cp.async multistage pipeline wait_group", "cp-async-pipeline"),
    ("fp16 accumulation gaussian error", "fp32-accumulation"),
    ("TMA multicast cluster", "clusters-tma-multicast"),
    ("stmatrix epilogue store", "epilogue-stores"),
])
def test_relevant_note_ranks_in_top_two(retriever, query, note):
    top = [c.meta.get("note") for c, _ in retriever.ranked(query)[:2]]
    assert note in top, f"{query!r} -> {top}"


def test_tokenize_splits_identifiers_and_keeps_them_whole():
    toks = tokenize("cuTensorMapEncodeTiled mbarrier.arrive.expect_tx")
    assert {"tensor", "map", "encod", "expect_tx", "expect", "tx", "mbarrier"} <= set(toks)
    assert any(t.startswith("cutensormapencod") for t in toks)


def test_query_without_shared_tokens_returns_nothing(retriever):
    assert retriever.search("zzqx qqzz", 5, 10_000) == []


# ---- budget ---------------------------------------------------------------------------------------

def test_token_budget_is_respected(retriever):
    for budget in (300, 1000, 6000):
        got = retriever.search("TMA wgmma mbarrier pipeline swizzle kernel", 50, budget)
        assert got and sum(c.tokens for c in got) <= budget


def test_chunk_over_budget_is_skipped_and_search_goes_on():
    big = make_chunk("big", "swizzle " * 2000, "swizzle swizzle swizzle", "note", {})
    small = [make_chunk(f"s{i}", f"swizzle note {i} " + "filler " * 20, f"small {i}", "note", {}) for i in range(3)]
    r = Retriever([big, *small], "")
    assert r.ranked("swizzle")[0][0].id == "big"
    got = r.search("swizzle", 2, 200)
    assert [c.id for c in got] and "big" not in [c.id for c in got] and len(got) == 2


def test_k_limits_the_count(retriever):
    assert len(retriever.search("tile", 3, 100_000)) == 3
    assert retriever.search("tile", 0, 100_000) == []


# ---- dense (import-guarded) ------------------------------------------------------------------------

def test_embedding_model_is_imported_lazily_and_fused_by_rank(monkeypatch):
    import numpy as np

    docs = [make_chunk(f"c{i}", text, f"t{i}", "note", {}) for i, text in
            enumerate(["tma swizzle", "mbarrier phase", "unrelated words entirely"])]
    r = Retriever(docs, "some-local-model")              # constructing must not load the model
    monkeypatch.setattr(r, "dense_scores", lambda q: np.array([0.1, 0.2, 0.9]))
    ranked = [c.id for c, _ in r.ranked("tma swizzle")]
    assert ranked[0] == "c0" and set(ranked) == {"c0", "c1", "c2"}   # BM25 + dense both count


# ---- corpus ---------------------------------------------------------------------------------------

def test_notes_have_titles_and_stay_short():
    for path in sorted(corpus.NOTES.glob("*.md")):
        text = path.read_text()
        assert text.startswith("# "), path.name
        assert 150 <= len(text.split()) <= 500, (path.name, len(text.split()))


def test_note_sections_become_titled_chunks(chunks):
    notes = [c for c in chunks if c.kind == "note"]
    assert len({c.meta["note"] for c in notes}) == len(list(corpus.NOTES.glob("*.md")))
    assert all(c.title and c.text and c.tokens == math.ceil(len(c.title) / 4) + math.ceil(len(c.text) / 4)
               for c in notes)


def test_seed_chunks_carry_family_params_and_shape(chunks):
    seeds = [c for c in chunks if c.kind == "seed"]
    if not seeds:
        pytest.skip("no kernel family imported")
    for c in seeds:
        M, N, K = c.meta["shape"]
        # Shape-specific families declare the shape; generic ones (run-time shape) claim every shape.
        assert c.meta["family"] and c.meta["params"] and parse_claim(c.text).covers(Problem(M, N, K))


V2 = ('// cudal2-shapes: {M}x{N}x{K}\n/* cudal2-launch\n{{"kernels": [{{"name": "k", "grid": [1], "block": [32], '
      '"args": ["A", "B", "C"]}}]}}\n*/\nextern "C" __global__ void k(const __half* A, const __half* B, __half* C) {{}}\n')
V1 = 'extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K) { return 0; }\n'


class _FakeFamily:
    """A family whose renders are v2 or v1, as asked."""

    def __init__(self, v2=True):
        self.v2 = v2

    def valid_points(self, p, lim):
        return [{"T": 1}, {"T": 2}]

    def prior(self, params, p, lim):
        return params["T"]

    def render(self, params, p):
        return V2.format(M=p.M, N=p.N, K=p.K) if self.v2 else V1


def test_is_v2_accepts_only_a_valid_launch_spec():
    assert corpus.is_v2(V2.format(M=1, N=8, K=8))
    assert not corpus.is_v2(V1)                                   # no spec: v1
    assert not corpus.is_v2(V2.replace('"block"', '"blocks"'))    # malformed spec: not v2 either
    assert not corpus.is_v2(V2 + V2)                              # two spec blocks


def test_only_v2_families_give_seeds(monkeypatch):
    monkeypatch.setattr(corpus, "_load_families", lambda: {"devonly": _FakeFamily(True), "hostcode": _FakeFamily(False)})
    seeds = corpus.seed_chunks(shapes=[(1024, 1024, 1024)], per_shape=2)
    assert [c.id for c in seeds] == ["seed/devonly/1024x1024x1024/0", "seed/devonly/1024x1024x1024/1"]
    assert all(corpus.is_v2(c.text) for c in seeds)


def test_seeds_of_the_real_families_are_v2_and_never_cutlass(chunks):
    seeds = [c for c in chunks if c.kind == "seed"]
    assert all(corpus.is_v2(c.text) for c in seeds)
    assert all(c.meta["family"] != "sm90" for c in seeds)   # the CUTLASS family is v1, trusted-only


def test_a_family_that_fails_to_render_is_skipped_with_a_warning(monkeypatch):
    fams = {"broken": _FakeFamily(), "fine": _FakeFamily()}

    def boom(*a, **k):
        raise RuntimeError("mid-edit")
    monkeypatch.setattr(fams["broken"], "render", boom)
    monkeypatch.setattr(corpus, "_load_families", lambda: fams)
    with pytest.warns(UserWarning, match="broken"):
        seeds = corpus.seed_chunks(shapes=[(1024, 1024, 1024)], per_shape=1)
    assert [c.meta["family"] for c in seeds] == ["fine"]


def test_library_chunk_has_source_under_measured_header(tmp_path):
    src = V2.format(M=4096, N=4096, K=4096)
    (tmp_path / "k.cu").write_text(src)
    (tmp_path / "k.cubin").write_bytes(b"cubin")
    sha = hashlib.sha256(src.encode()).hexdigest()
    manifest.write(tmp_path, [_entry("4096x4096x4096-sm80-abc", 4096, 4096, 4096, score=1.07, sha=sha)])
    [c] = corpus.library_chunks(tmp_path)
    assert c.kind == "library" and c.meta["shape"] == [4096, 4096, 4096]
    head, _, body = c.text.partition("\n\n")
    assert "score 1.070" in head and "offline speedup: cublas 1.070x" in head and body == src
    assert corpus.is_v2(c.text)   # the measured header does not hide the spec


# ---- shape distance --------------------------------------------------------------------------------

def test_log_shape_distance_orders_by_log_shape():
    shapes = {"far": (64, 64, 64), "near": (4096, 4096, 2048), "exact": (4096, 4096, 4096), "mid": (1024, 4096, 4096)}
    order = sorted(shapes, key=lambda n: log_shape_distance(shapes[n], None, 4096, 4096, 4096))
    assert order == ["exact", "near", "mid", "far"]


def test_log_shape_distance_m_range_covering_m_is_zero_along_m():
    assert log_shape_distance((None, 4096, 4096), [1, 512], 100, 4096, 4096) == 0.0
    assert log_shape_distance((None, 4096, 4096), [1, 512], 2048, 4096, 4096) == 2.0


# ---- prompts ----------------------------------------------------------------------------------------

def _task_vars(chunks, mode, parent=None):
    return dict(
        shape={"M": 128, "N": 4096, "K": 4096},
        gpu=dict(name="NVIDIA H100 80GB HBM3", sm_count=132, l2_bytes=52428800, smem_per_block_optin=232448,
                 max_sm_clock_mhz=1980, peak_tflops=1070.5, peak_tb_s=3.35),
        floor_us=10.64, baselines={"offline": {"cublas": 14.1}, "server": {"cublas": 22.7}},
        chunks=chunks,
        history=[dict(name="v1", score=1.05, stage="done", reason="", times_us={"offline": 13.4, "server": 21.0},
                      ptxas={"registers": 168, "spill_stores": 0}, ncu={"sm__throughput.pct": 61.2}),
                 dict(name="v2", score=None, stage="gaussian", reason="error 6.2x cuBLAS's")],
        failures=[dict(stage="build", reason="nvcc failed", compiler_error="error: identifier \"x\" is undefined",
                       mismatch={})],
        parent=parent, output_mode=mode)


@pytest.mark.parametrize("mode", ["full", "diff"])
def test_render_prompt_has_contract_shape_and_chunk_titles(retriever, mode):
    picked = retriever.search("TMA tensor map swizzle", 3, 6000)
    parent = "// parent kernel\n" + V2.format(M=128, N=4096, K=4096)
    system_vars = {**render.contract_vars(Config()), "output_mode": mode}
    msgs = render.render_prompt(system_vars, _task_vars(picked, mode, parent if mode == "diff" else None))
    assert [m["role"] for m in msgs] == ["system", "user"]
    system, user = msgs[0]["content"], msgs[1]["content"]
    assert "/* cudal2-launch" in system and 'extern "C" __global__' in system
    assert "M=128, N=4096, K=4096" in user
    assert picked and all(c.title in user for c in picked)
    if mode == "diff":
        assert parent.strip() in user
        assert "<<<<<<< SEARCH\n(exact lines from the parent)\n=======\n(replacement lines)\n>>>>>>> REPLACE" in system
    else:
        assert "<<<<<<< SEARCH" not in system and "```cuda block" in system + user


def _system(mode="full", flat=False):
    text = render.render_prompt({**render.contract_vars(Config()), "output_mode": mode},
                                _task_vars([], mode, "x" if mode == "diff" else None))[0]["content"]
    return " ".join(text.split()) if flat else text


def test_system_prompt_lists_the_v2_headers_and_no_host_api():
    system = _system()
    listed = system.split("Only these may be included: ")[1].split(". ")[0].split(", ")
    assert listed == list(policy.DEVICE_HEADERS)
    assert not any(d in system for d in policy.ALLOWED_DRIVER)   # no driver calls in a v2 file
    for gone in ("cudal2_gemm", "cudal2_workspace_bytes", "cudaStream_t", "static bool"):
        assert gone not in system


def test_system_prompt_states_the_launch_spec_limits_and_vocabulary():
    from cudal2.harness import launch

    system = _system(flat=True)
    assert f"1 to {launch.MAX_KERNELS}" in system and f"at most {launch.MAX_THREADS} threads" in system
    assert f"at most {launch.MAX_CLUSTER} CTAs" in system
    assert " \\| ".join(map(str, launch.SWIZZLES)) in system
    for word in ("`kernels`", "`workspace`", "`m_tiles`", "`kernels[].name`", "`kernels[].grid`", "`.block`",
                 "`.cluster`", "`kernels[].smem`", "`kernels[].args`",
                 '{"int": "expr"}', '{"ws": "expr"}', '"tmap"', "__grid_constant__ CUtensorMap", "cdiv(a, b)",
                 "min(a, b, ...)", "max(a, b, ...)", "in order, on the caller's stream"):
        assert word in system, word
    # the spec example the prompt shows is itself a valid spec
    example = next(b for b in _system().split("```c\n")[1:] if "cudal2-launch" in b).split("```")[0]
    spec = launch.parse(example)
    assert [k.name for k in spec.kernels] == ["gemm_partials", "reduce_partials"]
    assert spec.resolve(4096, 4096, 4096)[0].grid == (1024, 2, 1)


def test_system_prompt_states_what_the_judge_does_before_and_after_every_call():
    system = _system(flat=True)
    for fact in ("workspace with fresh random bytes", "C with random finite values", "regenerates the inputs",
                 "After every timed call", "fp16 partial sums", "cancelling", "__device__", "printf",
                 "device-side kernel launches", "-cubin"):
        assert fact in system, fact


def test_missing_task_variable_is_an_error_naming_it():
    tv = _task_vars([], "full")
    del tv["floor_us"]
    with pytest.raises(ValueError, match="floor_us"):
        render.render_prompt({**render.contract_vars(Config()), "output_mode": "full"}, tv)


def test_templates_are_strict():
    tv = _task_vars([], "full")
    del tv["gpu"]["sm_count"]
    with pytest.raises(jinja2.UndefinedError):
        render.render_prompt({**render.contract_vars(Config()), "output_mode": "full"}, tv)


def test_chunk_is_a_plain_dataclass():
    c = Chunk(id="x", text="t", title="T", kind="note", meta={}, tokens=1)
    assert (c.id, c.text, c.title, c.kind, c.meta, c.tokens) == ("x", "t", "T", "note", {}, 1)


def test_seed_that_won_a_library_entry_carries_its_measurement(tmp_path):
    from cudal2.retrieval.corpus import make_chunk, with_measurements
    seed = make_chunk("seed/x", "// kernel", "seed x", "seed", {"family": "sm90", "params": {"TILE_M": 128}, "shape": [1, 8, 8]})
    won = make_chunk("library/e", "// src", "lib e", "library",
                     {"family": "sm90", "params": {"TILE_M": 128}, "shape": [4096, 4096, 4096], "entry": "e", "score": 0.99})
    other = make_chunk("library/f", "// src", "lib f", "library",
                       {"family": "sm90", "params": {"TILE_M": 64}, "shape": [64, 64, 64], "entry": "f", "score": 1.2})
    out = with_measurements(seed, [won, other])
    assert out.text.startswith("// measured (library entry e, shape 4096x4096x4096): score 0.990x")
    assert "entry f" not in out.text and out.tokens > seed.tokens
