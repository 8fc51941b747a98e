"""Kernel families: parametrized CUDA C++ templates that render complete candidate files."""

from cudal2.kernels.family import Family, Limits, families, get_family

__all__ = ["Family", "Limits", "families", "get_family"]
