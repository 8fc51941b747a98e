"""The LLM inside the one search loop, on CPU with a real (tiny, offline-built) model:
prompts are rendered with retrieval, completions are parsed, failures are recorded and fed back,
and every completion lands in the JSONL trace. The tiny model writes nonsense, which is the point:
its proposals must cost only themselves."""


import pandas as pd
import pytest

from cudal2.harness.evaluate import Evaluator
from cudal2.harness.store import Store
from cudal2.problem import Problem
from cudal2.retrieval import corpus
from cudal2.retrieval.index import Retriever
from cudal2.search.engine import Search
from cudal2.search.llm_proposer import LLMProposer
from cudal2.search.population import Population


P = Problem(128, 256, 512)
H100 = {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132, "l2_bytes": 50 << 20, "smem_per_block_optin": 232448,
        "max_sm_clock_mhz": 1980, "peak_flops": 1.07e15, "peak_bytes_per_s": 3.35e12}


@pytest.fixture
def search(cfg, hf, tmp_path):
    cfg.llm.samples, cfg.llm.max_tokens, cfg.llm.trace = 2, 24, str(tmp_path / "trace.jsonl")
    cfg.search.batch, cfg.search.max_candidates = 2, 4
    store = Store(cfg.run.db)
    retriever = Retriever(corpus.note_chunks(), cfg.llm.embedding_model)
    lp = LLMProposer(hf, cfg, store, "", H100, retriever)
    s = Search(cfg, store, Evaluator(cfg, store), [lp], tmp_path / "lib")
    yield s
    s.ev.close()


def test_nonsense_completions_cost_only_themselves(search):
    (out,) = search.run([P])
    assert out.evaluated >= 2 and out.verified == 0
    assert set(out.stages) <= {"parse", "policy", "build"}


def test_every_completion_is_traced_and_loads_as_a_table(search):
    (out,) = search.run([P])
    df = pd.read_json(search.cfg.llm.trace, lines=True)
    assert len(df) >= out.evaluated >= 2  # duplicates are traced but judged once
    assert {"prompt", "completion", "parent_id", "stage", "ok", "score", "speedup_offline"} <= set(df.columns)
    assert df["prompt"][0][0]["role"] == "system" and "cudal2-launch" in df["prompt"][0][0]["content"]


def test_trace_loads_with_datasets(search):
    datasets = pytest.importorskip("datasets")
    search.run([P])
    ds = datasets.load_dataset("json", data_files=search.cfg.llm.trace, split="train")
    assert ds.num_rows >= 2 and isinstance(ds[0]["completion"], str)


def test_prompt_carries_retrieval_and_the_last_failures(search):
    search.run([P])
    lp = search.proposers[0]
    msgs, mode, _ = lp.messages(P, Population(search.cfg.run.db), None)
    assert mode == "full"  # no parent: the model writes a whole file
    user = msgs[1]["content"]
    assert "128" in user and "256" in user and "512" in user
    failed = [m for m in Population(search.cfg.run.db).members(P, "done") if not m.ok]
    assert failed and failed[-1].reason[:40] in user
    assert any(c.title in user for c in lp.retrieved(P))


V2 = ('/* cudal2-launch\n{"kernels": [{"name": "k", "grid": ["cdiv(M, 128)", "cdiv(N, 128)"], "block": [256], '
      '"args": ["A", "B", "C", "M", "N", "K"]}]}\n*/\nextern "C" __global__ void k(const __half* A, const __half* B, '
      '__half* C, int M, int N, int K) {}\n')
V1 = 'extern "C" int cudal2_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K) { return 0; }\n'


def _kernel(kind, shape, name, source=V2):
    return corpus.make_chunk(f"{kind}/{name}", f"// kernel {name}\n{source}", f"{kind} {name}", kind,
                             {"shape": list(shape)})


def test_retrieval_adds_the_nearest_library_kernel_other_than_this_shapes(cfg):
    chunks = corpus.note_chunks() + [_kernel("library", (P.M, P.N, P.K), "self"),
                                     _kernel("library", (128, 256, 1024), "near"),
                                     _kernel("library", (4096, 4096, 4096), "far"), _kernel("seed", (128, 256, 512), "s")]
    lp = LLMProposer(None, cfg, Store(cfg.run.db), "", H100, Retriever(chunks, ""))
    kernels = [c.id for c in lp.retrieved(P) if c.kind != "note"]
    assert kernels == ["library/near"]


def test_retrieval_falls_back_to_the_nearest_seed_without_a_library(cfg):
    chunks = corpus.note_chunks() + [_kernel("seed", (4096, 4096, 4096), "big"), _kernel("seed", (128, 4096, 4096), "thin")]
    lp = LLMProposer(None, cfg, Store(cfg.run.db), "", H100, Retriever(chunks, ""))
    kernels = [c.id for c in lp.retrieved(Problem(64, 4096, 4096)) if c.kind != "note"]
    assert kernels == ["seed/thin"]


def test_v1_kernels_are_never_shown_as_examples(cfg):
    chunks = corpus.note_chunks() + [_kernel("library", (128, 256, 512 * 2), "v1-near", V1),
                                     _kernel("library", (4096, 4096, 4096), "v2-far"),
                                     _kernel("library", (128, 256, 256), "bad-spec", V2.replace('"kernels"', '"kernelz"'))]
    lp = LLMProposer(None, cfg, Store(cfg.run.db), "", H100, Retriever(chunks, ""))
    assert [c.id for c in lp.retrieved(P) if c.kind != "note"] == ["library/v2-far"]


def _member(pop, store, name, source, score, family="sm80"):
    mid = pop.add(P, name, source, store.put_source(source), family, {"BM": len(name)}, None, "template", 1)
    pop.record(mid, True, "done", score)
    return pop.member(mid)


def test_parents_are_v2_members_only(cfg):
    from cudal2.search.llm_proposer import select_parents

    cfg.llm.output_mode = "diff"
    store, pop = Store(cfg.run.db), Population(cfg.run.db)
    v1 = _member(pop, store, "cutlass-best", V1, 1.3, family="sm90")
    v2 = _member(pop, store, "sm80-second", V2, 1.1)
    lp = LLMProposer(None, cfg, store, "", H100, None)
    assert [m.id for m in select_parents(pop, P, 2, lp.editable)] == [v2.id]
    msgs, mode, parent_src = lp.messages(P, pop, v2, _shared())
    assert mode == "diff" and parent_src == V2 and V2.strip() in msgs[1]["content"]
    # The v1 best stays in the history as a target, marked as a kernel the model cannot see.
    user = lp.messages(P, pop, v2)[0][1]["content"]
    assert "cutlass-best: score 1.300" in user and "its source is not available to you" in user
    assert user.count("its source is not available") == 1
    # A v1 parent given directly is never shown: the prompt falls back to a whole file from scratch.
    msgs, mode, parent_src = lp.messages(P, pop, v1, _shared())
    assert mode == "full" and parent_src is None and "cudal2_gemm(const" not in msgs[1]["content"]


def test_only_v1_members_means_a_prompt_from_scratch(cfg):
    from cudal2.search.llm_proposer import select_parents

    store, pop = Store(cfg.run.db), Population(cfg.run.db)
    _member(pop, store, "cutlass-best", V1, 1.3, family="sm90")
    lp = LLMProposer(None, cfg, store, "", H100, None)
    assert select_parents(pop, P, 3, lp.editable) == []


def _shared():
    return {"shape": {"M": P.M, "N": P.N, "K": P.K},
            "gpu": {"name": "H100", "sm_count": 132, "l2_bytes": 50 << 20, "smem_per_block_optin": 232448,
                    "max_sm_clock_mhz": 1980, "peak_tflops": 1070.0, "peak_tb_s": 3.35},
            "floor_us": 1.0, "baselines": {}, "chunks": [], "history": [], "failures": []}
