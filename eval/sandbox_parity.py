"""Does the compiler's sandbox change what a build makes? Every contract v2 source under
`kernels_out/`, `tests/kernels/good/` and `retrieval_corpus/`, built with `build.sandbox` 'on' and
'off' (each in an empty cache of its own): the verdicts and device hashes, compared.

  python eval/sandbox_parity.py --out eval/results/sandbox_parity_cpu_DATE.json

Measures nothing on a GPU; needs nvcc, and a machine where the sandbox runs ('on' refuses
otherwise, and every source then differs).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudal2.config import BuildConfig  # noqa: E402
from cudal2.harness import build, launch  # noqa: E402


def sources() -> list[Path]:
    found = [*ROOT.glob("kernels_out/**/*.cu"), *ROOT.glob("tests/kernels/good/*.cu"), *ROOT.glob("retrieval_corpus/**/*.cu")]
    return sorted(f for f in found if launch.parse(f.read_text()) is not None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    t0 = time.monotonic()
    on = BuildConfig(cache_dir=tempfile.mkdtemp(), sandbox="on")
    off = dataclasses.replace(on, cache_dir=tempfile.mkdtemp(), sandbox="off")
    rows = []
    for f in sources():
        text = f.read_text()
        s, o = build.build(text, on), build.build(text, off)
        rows.append({"source": str(f.relative_to(ROOT)), "ok": [s.ok, o.ok], "same": s.ok == o.ok and s.device_sha256 == o.device_sha256,
                     "reason": [s.reason[:200], o.reason[:200]]})
        print(("same " if rows[-1]["same"] else "DIFF ") + rows[-1]["source"], flush=True)
    out = {"sandbox_state": build.sandbox_state(on), "sources": len(rows), "same": sum(r["same"] for r in rows),
           "built": sum(all(r["ok"]) for r in rows), "differ": [r for r in rows if not r["same"]],
           "seconds": time.monotonic() - t0}
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(f"{out['same']} of {out['sources']} the same ({out['built']} built both ways)")


if __name__ == "__main__":
    main()
