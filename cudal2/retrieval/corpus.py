"""The retrieval corpus: technique notes, rendered seed kernels and verified library kernels, as chunks.

Guarantees:
- only contract v2 sources (device code plus a valid `/* cudal2-launch */` spec, `is_v2`) become
  kernel chunks: the model writes v2 and edits v2, so a v1 host-code file (the trusted-only CUTLASS
  family `sm90`) is never shown to it as an example (the library holds v2 entries only);
- notes: every `*.md` under `retrieval_corpus/notes/` becomes one chunk per `## ` section (text
  before the first section joins the first one), titled "<note title>: <section>"; a note must
  open with a `# ` title line, or it is skipped with a warning;
- seeds: for each kernel family whose renders are v2 (today `sm80`) and each shape in `SEED_SHAPES`,
  up to `per_shape` valid points,
  the best by the family's prior first, then the best-prior points that differ most from those
  already picked (so two seeds of one shape are not near-copies); a family that fails to import,
  enumerate or render is skipped with a warning, never fatal;
- library: one chunk per v2 manifest entry, the kernel source under a comment header of its
  measured results; a library that fails to read is skipped with a warning, an entry whose source
  is missing too;
- `log_shape_distance` is the Euclidean distance in (log2 M, log2 N, log2 K), an M-range counting
  as distance 0 along M when it covers M;
- token counts are estimates (characters / 4, rounded up) of title plus text, as the budget in
  `index.Retriever.search` uses them.

Does not: rank or search (see `index.py`), or check that seeds compile (the families' tests do).
"""

from __future__ import annotations

import importlib
import json
import math
import pkgutil
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from cudal2.resources import resource

NOTES = resource("retrieval_corpus") / "notes"

# Shapes seeds are rendered at: a large square, a skinny-M and a small square problem.
SEED_SHAPES: tuple[tuple[int, int, int], ...] = ((4096, 4096, 4096), (128, 4096, 4096), (1024, 1024, 1024))
_SEED_POOL = 64   # a seed is chosen among this many best-prior points


@dataclass
class Chunk:
    id: str
    text: str
    title: str
    kind: str                      # "note" | "seed" | "library"
    meta: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0                # estimate of title + text; filled in by `make_chunk`


def is_v2(source: str) -> bool:
    """True when `source` carries a valid contract v2 launch spec; a v1 file (no spec) or a malformed
    spec is not v2."""
    from cudal2.harness import launch

    try:
        return launch.parse(source) is not None
    except Exception:   # SpecError, and anything else a strange source provokes: not an example
        return False


def estimate_tokens(text: str) -> int:
    return -(-len(text) // 4)


def make_chunk(id: str, text: str, title: str, kind: str, meta: dict[str, Any]) -> Chunk:
    return Chunk(id=id, text=text, title=title, kind=kind, meta={"kind": kind, **meta},
                 tokens=estimate_tokens(title) + estimate_tokens(text))


# ---- notes ---------------------------------------------------------------------------------------

_SECTION = re.compile(r"^## +(.+?)\s*$", re.M)


def note_chunks(folder: Path = NOTES) -> list[Chunk]:
    chunks = []
    for path in sorted(Path(folder).glob("*.md")):
        text = path.read_text()
        first, _, body = text.partition("\n")
        if not first.startswith("# "):
            warnings.warn(f"retrieval note {path.name} skipped: it does not open with a '# title' line")
            continue
        title = first[2:].strip()
        heads = list(_SECTION.finditer(body))
        if not heads:
            chunks.append(make_chunk(f"note/{path.stem}#0", body.strip(), title, "note",
                                     {"note": path.stem, "section": ""}))
            continue
        intro = body[:heads[0].start()].strip()
        for i, h in enumerate(heads):
            end = heads[i + 1].start() if i + 1 < len(heads) else len(body)
            section = body[h.end():end].strip()
            if i == 0 and intro:
                section = intro + "\n\n" + section
            chunks.append(make_chunk(f"note/{path.stem}#{i}", section, f"{title}: {h.group(1)}", "note",
                                     {"note": path.stem, "section": h.group(1)}))
    return chunks


# ---- seeds ---------------------------------------------------------------------------------------

def _load_families() -> dict[str, Any]:
    """Every family that imports; one broken family module does not hide the others."""
    from cudal2.kernels import family as fam_mod
    try:
        return fam_mod.families()
    except Exception as e:  # a family written in parallel may be mid-edit
        warnings.warn(f"kernel families did not import together ({type(e).__name__}: {e}); trying one by one")
    import cudal2.kernels as pkg
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name == "family":
            continue
        try:
            importlib.import_module(f"cudal2.kernels.{info.name}")
        except Exception as e:
            warnings.warn(f"kernel family module {info.name} skipped: {type(e).__name__}: {e}")
    return dict(fam_mod._registry)


def _differences(a: dict, b: dict) -> int:
    return sum(a.get(k) != b.get(k) for k in set(a) | set(b))


def representative_points(points: list[dict], prior, n: int) -> list[dict]:
    """The best-prior point, then repeatedly the best-prior point among the top `_SEED_POOL` that
    differs from every pick in the most parameters. Deterministic for a given input."""
    ranked = sorted(points, key=lambda x: (-prior(x), json.dumps(x, sort_keys=True)))[:_SEED_POOL]
    picks: list[dict] = []
    while ranked and len(picks) < n:
        if not picks:
            best = ranked[0]
        else:
            best = max(ranked, key=lambda x: (min(_differences(x, p) for p in picks), -ranked.index(x)))
            if min(_differences(best, p) for p in picks) == 0:
                break
        picks.append(best)
        ranked.remove(best)
    return picks


def seed_chunks(shapes: Iterable[tuple[int, int, int]] = SEED_SHAPES, per_shape: int = 2) -> list[Chunk]:
    from cudal2.kernels.family import Limits
    from cudal2.problem import Problem

    lim = Limits()
    chunks = []
    for name, fam in sorted(_load_families().items()):
        if not getattr(fam, "retrieval_seed", True):
            continue
        try:
            for M, N, K in shapes:
                p = Problem(M, N, K)
                points = fam.valid_points(p, lim)
                for j, params in enumerate(representative_points(points, lambda x: fam.prior(x, p, lim), per_shape)):
                    src = fam.render(params, p)
                    if not is_v2(src):   # v1 (trusted-only, e.g. the CUTLASS family): never an example
                        continue
                    title = f"Seed kernel, family {name}, {M}x{N}x{K}: " + ", ".join(f"{k}={v}" for k, v in params.items())
                    chunks.append(make_chunk(f"seed/{name}/{M}x{N}x{K}/{j}", src, title, "seed",
                                             {"family": name, "params": params, "shape": [M, N, K]}))
        except Exception as e:
            warnings.warn(f"seed kernels of family {name} skipped: {type(e).__name__}: {e}")
            chunks = [c for c in chunks if c.meta.get("family") != name]
    return chunks


# ---- library -------------------------------------------------------------------------------------

def _shape_text(e) -> str:
    m = f"M={e.m_range[0]}-{e.m_range[1]}" if e.m_range is not None else f"M={e.M}"
    return f"{m} N={e.N} K={e.K}"


def _measured_header(e) -> list[str]:
    """Comment lines stating what the entry measured, every number with its unit."""
    m = e.measured
    lines = [f"// cudal2 library entry {e.id}: family {e.family or 'custom'}, {_shape_text(e)}",
             f"// measured on {e.gpu.get('name') or 'unknown GPU'}: score {e.score:.3f} (speedup over the baselines, "
             "geometric mean over timing modes)"]
    for mode, sp in sorted((m.get("speedup") or {}).items()):
        lines.append(f"// {mode} speedup: " + ", ".join(f"{b} {v:.3f}x" for b, v in sorted(sp.items())))
    for mode, ts in sorted((m.get("times_us") or {}).items()):
        lines.append(f"// {mode} times: " + ", ".join(f"{r} {v:.2f} us" for r, v in sorted(ts.items())))
    for mode, v in sorted((m.get("tflops") or {}).items()):
        lines.append(f"// {mode} throughput: {v:.1f} TFLOP/s")
    for mode, v in sorted((m.get("floor_fraction") or {}).items()):
        lines.append(f"// {mode} floor / time: {v:.3f}")
    if e.params:
        lines.append(f"// params: {json.dumps(e.params, sort_keys=True)}")
    return lines


def library_chunks(folder: Path) -> list[Chunk]:
    from cudal2.library import manifest

    try:
        entries = manifest.read(Path(folder))
    except Exception as e:
        warnings.warn(f"kernel library {folder} skipped: {e}")
        return []
    chunks = []
    for e in entries:
        try:
            src = (Path(folder) / e.source).read_text()
        except OSError as err:
            warnings.warn(f"library entry {e.id} skipped: {err}")
            continue
        text = "\n".join(_measured_header(e)) + "\n\n" + src
        title = f"Library kernel {e.id} ({e.family or 'custom'}, {_shape_text(e)}), score {e.score:.3f}"
        shape = [e.M, e.N, e.K]
        chunks.append(make_chunk(f"library/{e.id}", text, title, "library",
                                 {"shape": shape, "m_range": e.m_range, "family": e.family, "entry": e.id,
                                  "score": e.score, "params": e.params}))
    return chunks


def log_shape_distance(shape, m_range, M: int, N: int, K: int) -> float:
    """Euclidean distance in (log2 M, log2 N, log2 K) from `shape` (M may be None when `m_range`
    is given); an M-range covering M is 0 along M."""
    eM, eN, eK = shape
    if m_range is None:
        dm = math.log2(eM / M)
    else:
        lo, hi = m_range
        dm = 0.0 if lo <= M <= hi else math.log2(lo / M) if M < lo else math.log2(M / hi)
    return math.sqrt(dm * dm + math.log2(eN / N) ** 2 + math.log2(eK / K) ** 2)


# ---- everything ----------------------------------------------------------------------------------

def build(library_folder: Path | None, notes_folder: Path = NOTES,
          seed_shapes: Iterable[tuple[int, int, int]] = SEED_SHAPES) -> list[Chunk]:
    """Notes, then seeds, then library entries (when `library_folder` is given)."""
    seeds = seed_chunks(seed_shapes)
    lib = library_chunks(library_folder) if library_folder is not None else []
    return note_chunks(notes_folder) + [with_measurements(c, lib) for c in seeds] + lib


def with_measurements(seed: Chunk, lib: list[Chunk]) -> Chunk:
    """A seed whose family and parameters won a library entry gets that entry's measured results
    prepended, so the model sees what the seed achieved, not only what it is."""
    won = [c for c in lib if c.meta.get("family") == seed.meta.get("family")
           and c.meta.get("params") == seed.meta.get("params")]
    if not won:
        return seed
    lines = [f"// measured (library entry {c.meta['entry']}, shape {'x'.join(map(str, c.meta['shape']))}): "
             f"score {c.meta.get('score', 0):.3f}x vs the faster of cuBLAS and the cuBLASLt heuristic" for c in won[:3]]
    return make_chunk(seed.id, "\n".join(lines) + "\n" + seed.text, seed.title, seed.kind,
                      {k: v for k, v in seed.meta.items() if k != "kind"})
