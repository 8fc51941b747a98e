"""The LLM shape list of issue 12: M in {1, 16, 128, 512, 2048, 8192} crossed with the layer GEMMs
(q/k/v/o, gate/up/down, LM head) of the decoder configs in eval/models/, derived by the same code
as `cudal2 generate --model` (`cudal2.model_shapes`). Writes eval/llm_shapes.json, which
`cudal2 generate --shapes eval/llm_shapes.json` searches.

  python eval/llm_shapes.py
"""

from __future__ import annotations

import json
from pathlib import Path

from cudal2.model_shapes import layer_gemms, model_problems

HERE = Path(__file__).resolve().parent
MODELS = ("llama3_8b", "llama3_70b", "qwen2_5_7b", "qwen2_5_32b", "mistral_7b")
MS = [1, 16, 128, 512, 2048, 8192]


def main() -> None:
    models, shapes = {}, []
    for name in MODELS:
        cfg = HERE / "models" / f"{name}.json"
        models[name] = {layer: list(nk) for layer, nk in layer_gemms(cfg).items()}
        shapes += [[p.M, p.N, p.K] for p in model_problems(cfg, MS) if [p.M, p.N, p.K] not in shapes]
    lines = ",\n  ".join(json.dumps(s) for s in shapes)
    (HERE / "llm_shapes.json").write_text(
        f'{{"ms": {json.dumps(MS)},\n "models": {json.dumps(models)},\n "shapes": [\n  {lines}\n ]}}\n')
    print(f"{len(shapes)} shapes from {len(MODELS)} models")


if __name__ == "__main__":
    main()
