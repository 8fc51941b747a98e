"""Review 46: bad/zz46_mrange_interior_fp16_partials judged in this process at 257x136x1032, with the
light check as it was (the cancelling trial alone) and as it is (a Gaussian and the cancelling
trial). Prints one JSON line per run. Usage: python eval/review46_light_probe.py [before]"""
import json
import sys
from pathlib import Path

from cudal2.config import Config
from cudal2.harness import judge
from cudal2.harness.artifact import JudgeRequest
from cudal2.harness.build import build
from cudal2.harness.launch import LaunchSpec
from cudal2.problem import Problem, parse_claim

before = len(sys.argv) > 1 and sys.argv[1] == "before"
if before:   # the light check as it was: the cancelling trial only
    real = judge.trial_dists
    judge.trial_dists = lambda light, n: ["cancel"] if light else real(light, n)
cfg = Config.load(timing={"repeats": 3, "server_calls": 4, "autotune_k": 4, "min_replay_ms": 0.2, "max_sets": 8},
                  verify={"call_timeout_s": 5.0})
src = (Path(__file__).parent.parent / "tests/kernels/bad/zz46_mrange_interior_fp16_partials.cu").read_text()
p = Problem(257, 136, 1032)
b = build(src, cfg.build)
assert b.ok, b.reason
full, light = parse_claim(src).verification_shapes(p, LaunchSpec.from_dict(b.spec).m_tiles)
req = JudgeRequest(b.lib_path, b.kind, b.spec, p.M, p.N, p.K, cfg, [(s.M, s.N, s.K) for s in full],
                   [(s.M, s.N, s.K) for s in light], True)
d = judge.judge(req)
worst = max((c.get("rel_ratio", 0) for k, v in d["checks"].items() if isinstance(v, dict)
             for c in v.get("gaussian", [])), default=None)
print(json.dumps({"light_check": "cancel only" if before else "normal + cancel", "ok": d["ok"], "stage": d["stage"],
                  "reason": d["reason"][:300], "light_shapes": len(light), "worst_rel_ratio": worst,
                  "offline_speedup": (d.get("speedup") or {}).get("offline", {}).get("vendor_default")}))
