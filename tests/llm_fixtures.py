"""A tiny real causal LM, built offline in a few seconds, for the LLM tests (wrap `tiny_model` in
a session fixture, as tests/test_llm_backends.py does, to build it once per run).

Guarantees: `tiny_model(dir)` writes a folder that `AutoTokenizer` and `AutoModelForCausalLM`
load like any hub checkpoint: a byte-level BPE tokenizer trained on the honest test kernels
(so any text encodes), with pad/bos/eos and role tokens and a jinja chat template, and a
2-layer Llama with hidden size 64 and seeded random weights, so the same call writes the same
weights. It fetches nothing.

Does not: produce sensible text (the weights are random; tests check plumbing, counts,
sampling and determinism, not content).
"""

from __future__ import annotations

from pathlib import Path

KERNELS_GOOD = Path(__file__).parent / "kernels" / "good"
SPECIALS = ["<|pad|>", "<|bos|>", "<|eos|>", "<|system|>", "<|user|>", "<|assistant|>"]
# Each message is its role token, its content, then eos; the generation prompt opens an
# assistant turn, so a model that learned this format would stop at eos.
CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{{ eos_token }}"
                 "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")


def tiny_model(dir: str | Path) -> str:
    """Build the tiny model into `dir` (reused when already there) and return its path."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(dir)
    if (out / "config.json").exists() and (out / "tokenizer.json").exists():
        return str(out)
    corpus = [p.read_text() for p in sorted(KERNELS_GOOD.glob("*.cu"))]
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    bpe.train_from_iterator(corpus, trainer=trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<|pad|>", bos_token="<|bos|>",
                                  eos_token="<|eos|>")
    tok.chat_template = CHAT_TEMPLATE

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=4096,
                      pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id, tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)
