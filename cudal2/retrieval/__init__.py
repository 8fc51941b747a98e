"""Retrieval-augmented context for the LLM proposer: a corpus of notes, seed kernels and library
kernels (`corpus`), a BM25 ranking over it (`index`), and the prompt templates' renderer (`render`)."""

from cudal2.retrieval.corpus import Chunk, build
from cudal2.retrieval.index import Retriever, tokenize
from cudal2.retrieval.render import contract_vars, render_prompt

__all__ = ["Chunk", "Retriever", "build", "contract_vars", "render_prompt", "tokenize"]
