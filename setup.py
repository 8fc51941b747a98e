"""Build hook only (the project is described in pyproject.toml): the wheel carries the data folders
that live beside the package in the repository, under cudal2/_data/ (see cudal2/resources.py)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA = ("kernels_out", "prompts", "retrieval_corpus")


class BuildWithData(build_py):
    def run(self):
        super().run()
        for name in DATA:
            src = Path(name)
            if src.is_dir():
                dst = Path(self.build_lib) / "cudal2" / "_data" / name
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", ".*"))


setup(cmdclass={"build_py": BuildWithData})
