"""A Llama decoder layer with and without `cudal2.patch`, on the GPU machine, fresh process.

  python eval/decoder_layer.py --config eval/models/llama3_8b.json [--config …] --m 16,2048 --out FILE.json

The layer is built from the config's sizes with random fp16 weights (no downloads): RMSNorm,
q/k/v/o projections with grouped-query attention (torch's SDPA, causal), RMSNorm, and the SwiGLU
MLP (gate, up, down); RoPE is left out (it is not a GEMM and is the same on both sides). For each
M (tokens in the batch) the forward pass is timed as `cudal2 library bench` times a shape
(`product_bench.modes`: paired rounds, the order alternating, median of per-round ratios; eager
back-to-back, graph captured afresh each round and replayed, flushed one forward after an L2 flush
and an idle GPU), under torch.inference_mode. Each row's `<mode>` is unpatched / patched time,
beside each side's median µs per forward (`<mode>_us`: ours = patched). The library's hits per
entry are recorded, so the figures say whether any library kernel ran. Nothing is asserted: a measurement for eval/README.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F

import cudal2
from cudal2.library import product_bench


class Block(torch.nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        h, i = c["hidden_size"], c["intermediate_size"]
        self.heads, self.kv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
        self.hd = h // self.heads
        lin = lambda a, b: torch.nn.Linear(a, b, bias=False)  # noqa: E731
        self.q, self.k, self.v, self.o = lin(h, h), lin(h, self.kv * self.hd), lin(h, self.kv * self.hd), lin(h, h)
        self.gate, self.up, self.down = lin(h, i), lin(h, i), lin(i, h)
        self.n1, self.n2 = torch.nn.RMSNorm(h, eps=c["rms_norm_eps"]), torch.nn.RMSNorm(h, eps=c["rms_norm_eps"])

    def forward(self, x):  # x: (batch, seq, hidden)
        b, s, _ = x.shape
        y = self.n1(x)
        q = self.q(y).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.k(y).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.v(y).view(b, s, self.kv, self.hd).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


def main(configs: list[Path], ms: list[int], out: Path, aa: bool = False, only: list[str] | None = None) -> None:
    rows = []
    lib = cudal2.library.default()
    flush = product_bench.flush_buffer(torch)
    clock = product_bench.TorchClock(torch, flush)
    for config in configs:   # one layer at a time: a 70B layer's weights are 1.7 GB
        rows += layer_rows(config, ms, lib, clock, aa, only)
        torch.cuda.empty_cache()
    result = {"configs": [str(c) for c in configs], "aa": aa, "only": only, "rows": rows, "stats": lib.stats(),
              "served": len(lib.served), "device": torch.cuda.get_device_name()}
    out.write_text(json.dumps(result, indent=1))


def layer_rows(config: Path, ms: list[int], lib, clock, aa: bool, only: list[str] | None) -> list[dict]:
    c = json.loads(config.read_text())
    block = Block(c).cuda().half()
    rows = []
    with torch.inference_mode():
        for M in ms:
            x = torch.randn(1, M, c["hidden_size"], device="cuda", dtype=torch.float16)
            cudal2.unpatch(block)
            want = block(x)
            row = {"model": config.stem, "M": M, "layers_routed": cudal2.patch(block)}   # 0: the patched block is the plain one (noise)
            before = sum(lib.stats()["hits"].values())
            got = block(x)
            row["kernel_calls"] = sum(lib.stats()["hits"].values()) - before   # per forward, eager
            row["max_abs_diff"] = float((got.float() - want.float()).abs().max())
            patched, plain = (lambda: block(x)), (lambda: block(x))   # two callers: `use` tells them apart

            def use(f):   # runs before each caller's capture or timing, outside it
                cudal2.unpatch(block)
                if f is patched and not aa:
                    for m in [getattr(block, n) for n in only] if only else [block]:
                        cudal2.patch(m)
            # The product bench's own paced, paired modes: eager, graph captured afresh each round
            # and uploaded untimed (not run), flushed (one forward after an L2 flush and an idle GPU).
            row.update(product_bench.paced_modes(clock, patched, plain, rounds=15, calls=10, use=use))
            cudal2.unpatch(block)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", type=Path, action="append", required=True, help="a model config (repeatable)")
    ap.add_argument("--m", default="16,2048")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--aa", action="store_true",
                    help="A/A: both callers run the plain block, patched and unpatched alike (the method's noise floor)")
    ap.add_argument("--only", help="patch only these projections (e.g. down,gate): which layer moves the ratio")
    a = ap.parse_args()
    main(a.config, [int(v) for v in a.m.split(",")], a.out, a.aa, a.only.split(",") if a.only else None)
