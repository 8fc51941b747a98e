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
    assert df["prompt"][0][0]["role"] == "system" and "cudal2_gemm" in df["prompt"][0][0]["content"]


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


def _kernel(kind, shape, name):
    return corpus.make_chunk(f"{kind}/{name}", "// kernel " + name, f"{kind} {name}", kind, {"shape": list(shape)})


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
