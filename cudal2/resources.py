"""Where the project's data folders are: `kernels_out/`, `prompts/` and `retrieval_corpus/`.

Guarantees: `resource(name)` is the folder inside an installed package (`cudal2/_data/<name>`, which
the wheel build copies there: see setup.py) when it exists, else the one beside the package in a
source checkout or an editable install; so a plain `pip install .` works from any directory.

Does not: create or validate anything in them.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
DATA_FOLDERS = ("kernels_out", "prompts", "retrieval_corpus")


def resource(name: str) -> Path:
    installed = PACKAGE / "_data" / name
    return installed if installed.is_dir() else PACKAGE.parent / name
