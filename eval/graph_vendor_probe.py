"""Graph mode at shapes the library leaves to the vendor: F.linear against torch.mm(x, w.t()) and
cudal2.linear (21 paired rounds of a captured graph of 50 calls each, medians of t(F.linear) / t(x)),
and the CUDA kernels each one launches (torch profiler). Written when the product bench measured
two vendor shapes at 0.97 in graph mode (2026-11-24): is our vendor call a different kernel?

  python eval/graph_vendor_probe.py OUT.json      (after `cudal2 library build`; GPU machine)

Does not: assert anything, or time eager or flushed modes (the product bench does).
"""
import json, statistics, sys
import torch
import cudal2
from cudal2.library import product_bench as pb
F = torch.nn.functional
shapes = [(512, 512, 512), (16, 4096, 4096), (512, 1024, 1024), (1024, 2048, 4096), (96, 96, 96)]
out = {}
for M, N, K in shapes:
    A, W = pb._torch_inputs(torch, M, N, K)
    fs = {"F.linear": lambda: F.linear(A, W), "mm": lambda: torch.mm(A, W.t()), "cudal2": lambda: cudal2.linear(A, W)}
    clock = pb.TorchClock(torch, torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))
    graphs = {k: clock.graph(lambda f=f: [f() for _ in range(50)]) for k, f in fs.items()}
    for g in graphs.values(): g()
    torch.cuda.synchronize()
    ratios = {k: [] for k in ("mm", "cudal2")}
    for r in range(21):
        t = {k: clock.time(g) for k, g in (list(graphs.items()) if r % 2 else list(graphs.items())[::-1])}
        for k in ratios: ratios[k].append(t["F.linear"] / t[k])
    kern = {}
    for k, f in fs.items():
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            f(); torch.cuda.synchronize()
        kern[k] = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
    out[f"{M}x{N}x{K}"] = {"vs_F.linear": {k: round(statistics.median(v), 4) for k, v in ratios.items()}, "kernels": kern}
    print(f"{M}x{N}x{K}", json.dumps(out[f"{M}x{N}x{K}"]), flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
