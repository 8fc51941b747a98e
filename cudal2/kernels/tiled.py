"""The tiled family: the shortest complete tensor-core HGEMM in the project (mma.sync m16n8k16,
one shared-memory stage, 32x32 warp tiles, masked edges), about 4 KB a render. It exists for
training: a small model can learn to write a file this long, where an sm80 render (cp.async
pipeline, swizzle, ldmatrix, split-K) is 3.4-3.8k tokens. Its points differ in block tile and K
step, so their speed differs by shape, which gives GRPO's groups a spread to learn from.

Renders contract v2 (docs/kernel-contract.md): device code and a launch block whose grid is an
expression of M and N, so a render is the same text for every shape (no `cudal2-shapes` line: it
serves any shape, and a model learns one file per point, not arithmetic). Covered: any M and N,
any K % 8 == 0 (16-byte chunks, zero-filled past the edges; stores masked).

Guarantees: `invalid` rejects tiles far larger than the problem (a `Problem` already has K % 8 ==
0); every other point
of the space builds for sm_90a (static shared memory at most 36 KiB). Does not: pipeline its loads
(no cp.async, no double buffering), so it is far below cuBLAS and not in the search's default
families; nothing here was timed.
"""

from __future__ import annotations

from typing import Any

from cudal2.kernels.family import Family, Limits, Params, cdiv, register
from cudal2.problem import Problem

WARP_TILE = 32   # each warp owns 32 x 32 outputs: 2 x 4 mma tiles of 16 x 8


class Tiled(Family):
    name = "tiled"
    template = "tiled.cu.j2"
    build_archs = ("sm_90a",)
    space = {"BM": (64, 32, 128), "BN": (64, 32, 128), "BK": (32, 64)}
    shape_specific = False
    retrieval_seed = False   # a training aid, slower than every searched family: not an example to copy

    def context(self, params: Params, p: Problem) -> dict[str, Any]:
        wm, wn = params["BM"] // WARP_TILE, params["BN"] // WARP_TILE
        return {"WARPS_M": wm, "WARPS_N": wn, "THREADS": 32 * wm * wn}

    def invalid(self, params: Params, p: Problem, lim: Limits) -> str | None:
        for name, dim in (("BM", p.M), ("BN", p.N)):
            if params[name] > WARP_TILE and params[name] >= 2 * dim:
                return f"{name}={params[name]} is at least twice the problem's {dim}: a smaller tile does the same"
        return None

    def prior(self, params: Params, p: Problem, lim: Limits) -> float:
        # Larger tiles reuse each loaded chunk more, until the grid no longer fills the SMs.
        ctas = cdiv(p.M, params["BM"]) * cdiv(p.N, params["BN"])
        fill = min(1.0, ctas / lim.sm_count)
        reuse = params["BM"] * params["BN"] / (params["BM"] + params["BN"])
        return fill * reuse * (1.05 if params["BK"] == 64 else 1.0)


register(Tiled())
