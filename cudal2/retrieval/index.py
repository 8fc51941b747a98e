"""Ranking corpus chunks for a prompt: BM25 over a code-aware tokenization, optionally fused with
dense embeddings.

Guarantees:
- tokenization keeps whole identifiers and PTX names (`cp.async.bulk.tensor`, `expect_tx`,
  `cuTensorMapEncodeTiled`) and also their parts split on dots, colons, underscores and
  camelCase, lower-cased, with a light suffix stemmer (swizzle/swizzled/swizzling agree) and
  common English words dropped; the same function tokenizes chunks and queries;
- BM25 (the `bm25s` package, Lucene variant) indexes each chunk's title and text; a chunk that
  shares no token with the query is never returned by BM25 alone;
- `search` walks the ranking best-first and keeps a chunk only when its token estimate fits what is
  left of the budget (a chunk that does not fit is skipped, and the walk goes on), until k chunks;
- with an embedding model (the config's `llm.embedding_model`), `sentence_transformers` is imported
  on first use only, and the ranking is reciprocal-rank fusion of the BM25 and cosine rankings.

Does not: persist the index (building it for a few hundred chunks takes milliseconds), or download
anything itself (an embedding model must be available to sentence-transformers locally).
"""

from __future__ import annotations

import re
from typing import Collection, Sequence

import numpy as np

from cudal2.retrieval.corpus import Chunk

_RAW = re.compile(r"[A-Za-z0-9_]+(?:(?:\.|::?)[A-Za-z0-9_]+)*")
_DOTS = re.compile(r"[.:]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_STOP = frozenset("""a an and are as at be been but by can do does each every for from had has have how if in into
is it its may more most must no not of on once one only or other our out over same should so some such than that
the their them then there these they this those through to too up use used uses using very was we were what when
where which while who why will with would you your""".split())
_RRF_K = 60  # reciprocal-rank fusion constant (the usual choice; it damps the head of each ranking)


def _stem(w: str) -> str:
    if not w.isalpha() or len(w) < 4:
        return w
    for suf in ("ing", "ed", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            if suf == "s" and w.endswith(("ss", "us", "is")):
                break
            w = w[: -len(suf)]
            break
    return w[:-1] if w.endswith("e") and len(w) > 3 else w


def tokenize(text: str) -> list[str]:
    out = []
    for raw in _RAW.findall(text):
        pieces = {raw}
        for seg in filter(None, _DOTS.split(raw)):       # cp.async.bulk -> cp, async, bulk
            pieces.add(seg)
            for part in filter(None, seg.split("_")):    # expect_tx -> expect, tx
                pieces.add(part)
                pieces.update(_CAMEL.findall(part))      # cuTensorMap -> cu, Tensor, Map
        for piece in sorted(pieces, key=lambda s: (raw.find(s), s)):
            t = piece.lower()
            if len(t) < 2 or t in _STOP:
                continue
            out.append(_stem(t))
    return out


class Retriever:
    """BM25 (and optionally dense) ranking over a fixed list of chunks.

        r = Retriever(corpus.build(library_folder), cfg.llm.embedding_model)
        chunks = r.search("TMA multicast cluster", cfg.llm.retrieval_k, cfg.llm.retrieval_tokens)
    """

    def __init__(self, chunks: Sequence[Chunk], embedding_model: str):
        import bm25s

        self.chunks = list(chunks)
        self.embedding_model = embedding_model
        self._bm25 = None
        if self.chunks:
            self._bm25 = bm25s.BM25()
            self._bm25.index([tokenize(c.title + "\n" + c.text) for c in self.chunks], show_progress=False)
        self._encoder = None
        self._embeddings: np.ndarray | None = None

    # ---- scores ----------------------------------------------------------------------------------

    def bm25_scores(self, query: str) -> np.ndarray:
        if self._bm25 is None:
            return np.zeros(0)
        vocab = self._bm25.vocab_dict
        terms = [t for t in dict.fromkeys(tokenize(query)) if t in vocab]
        if not terms:
            return np.zeros(len(self.chunks))
        return np.asarray(self._bm25.get_scores(terms), dtype=np.float64)

    def dense_scores(self, query: str) -> np.ndarray:
        if self._encoder is None:
            from sentence_transformers import SentenceTransformer  # optional; only with embedding_model

            self._encoder = SentenceTransformer(self.embedding_model)
            self._embeddings = self._encoder.encode([c.title + "\n" + c.text for c in self.chunks],
                                                    normalize_embeddings=True, convert_to_numpy=True)
        q = self._encoder.encode([query], normalize_embeddings=True, convert_to_numpy=True)[0]
        return np.asarray(self._embeddings @ q, dtype=np.float64)

    def ranked(self, query: str) -> list[tuple[Chunk, float]]:
        """Every candidate chunk with its score, best first (ties keep corpus order)."""
        if not self.chunks:
            return []
        bm = self.bm25_scores(query)
        if not self.embedding_model:
            order = sorted((i for i in range(len(bm)) if bm[i] > 0), key=lambda i: -bm[i])
            return [(self.chunks[i], float(bm[i])) for i in order]
        dense = self.dense_scores(query)
        fused = np.zeros(len(self.chunks))
        bm_order = [i for i in np.argsort(-bm, kind="stable") if bm[i] > 0]
        for rank, i in enumerate(bm_order):
            fused[i] += 1.0 / (_RRF_K + rank + 1)
        for rank, i in enumerate(np.argsort(-dense, kind="stable")):
            fused[i] += 1.0 / (_RRF_K + rank + 1)
        order = np.argsort(-fused, kind="stable")
        return [(self.chunks[i], float(fused[i])) for i in order]

    # ---- the prompt's view ------------------------------------------------------------------------

    def search(self, query: str, k: int, token_budget: int, *, kinds: Collection[str] | None = None) -> list[Chunk]:
        """Up to k chunks, best first, whose token estimates add up to at most `token_budget`;
        `kinds` keeps only chunks of those kinds ("note", "seed", "library")."""
        out: list[Chunk] = []
        left = token_budget
        if k <= 0 or token_budget <= 0:
            return out
        for c, _ in self.ranked(query):
            if kinds is not None and c.kind not in kinds:
                continue
            if c.tokens > left:
                continue
            out.append(c)
            left -= c.tokens
            if len(out) == k:
                break
        return out
