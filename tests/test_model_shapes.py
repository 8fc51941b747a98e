"""GEMM shapes of a decoder config (`cudal2 generate --model`)."""

import json

import pytest

from cudal2.model_shapes import layer_gemms, model_problems, parse_ms
from cudal2.problem import Problem, ProblemError

LLAMA3_8B = {"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
             "vocab_size": 128256, "model_type": "llama"}


@pytest.fixture
def config(tmp_path):
    f = tmp_path / "config.json"
    f.write_text(json.dumps(LLAMA3_8B))
    return f


def test_llama3_8b_layers(config):
    g = layer_gemms(config)
    assert g["q_proj"] == (4096, 4096) and g["k_proj"] == (1024, 4096) and g["o_proj"] == (4096, 4096)
    assert g["gate_proj"] == (14336, 4096) and g["down_proj"] == (4096, 14336) and g["lm_head"] == (128256, 4096)


def test_shapes_cross_m_without_duplicates(config):
    ps = model_problems(config, [16, 2048])
    assert Problem(16, 4096, 4096) in ps and Problem(2048, 4096, 14336) in ps
    assert len(ps) == len(set(ps)) == 2 * 5  # q=o, k=v and gate=up share shapes


def test_explicit_head_dim_wins(tmp_path):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({**LLAMA3_8B, "head_dim": 128, "num_attention_heads": 40}))
    assert layer_gemms(f)["q_proj"] == (5120, 4096)


def test_missing_field_is_a_one_line_error(tmp_path):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({k: v for k, v in LLAMA3_8B.items() if k != "intermediate_size"}))
    with pytest.raises(ProblemError, match="intermediate_size"):
        layer_gemms(f)


def test_bad_m_list_is_a_one_line_error():
    with pytest.raises(ProblemError, match="--m"):
        parse_ms("1,x")
