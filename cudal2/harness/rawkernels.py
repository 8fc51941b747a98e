"""The harness's own CUDA kernels, compiled and loaded once per process.

Guarantees: `function(src, name, options)` returns the kernel `name` of the module built from
`src` with `options`; each module is compiled and loaded once, and each function looked up once
(a lookup costs about what a launch does), so the per-call paths of the judge pay neither.

Does not: load candidate code (harness/module.py does), or check what a kernel does.
"""

from __future__ import annotations

import functools

import cupy as cp


@functools.cache
def module(src: str, options: tuple[str, ...] = ()) -> cp.RawModule:
    return cp.RawModule(code=src, options=options)


@functools.cache
def function(src: str, name: str, options: tuple[str, ...] = ()):
    return module(src, options).get_function(name)
