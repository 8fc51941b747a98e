"""The wheel carries what a non-editable install needs: the library, the templates, the prompts and
the retrieval corpus."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                    str(ROOT)], check=True, capture_output=True, text=True)
    (whl,) = out.glob("cudal2-*.whl")
    return zipfile.ZipFile(whl)


@pytest.mark.parametrize("member", ["cudal2/_data/kernels_out/sm90/manifest.json", "cudal2/_data/prompts/system.j2",
                                    "cudal2/_data/prompts/task.j2", "cudal2/kernels/templates/sm80_mma.cu.j2",
                                    "cudal2/kernels/templates/sm90_cutlass.cu.j2",
                                    "cudal2/_data/retrieval_corpus/notes/wgmma-sm90a.md",
                                    "cudal2/csrc/dispatch.cpp", "cudal2/rl/data/grid1000.json"])
def test_wheel_carries(wheel, member):
    assert member in wheel.namelist()


def test_wheel_carries_every_library_source(wheel):
    import json
    manifest = json.loads(wheel.read("cudal2/_data/kernels_out/sm90/manifest.json"))
    names = set(wheel.namelist())
    assert all(f"cudal2/_data/kernels_out/sm90/{e['source']}" in names for e in manifest["entries"])


def test_installed_wheel_finds_its_data_away_from_the_checkout(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), wheel.filename],
                   check=True, capture_output=True, text=True)
    code = ("import cudal2, json; from cudal2.resources import resource; from cudal2.library import manifest; "
            "from cudal2.retrieval.render import render_prompt; from cudal2.kernels import get_family; "
            "print(json.dumps([str(resource('prompts')), len(manifest.read(resource('kernels_out') / 'sm90')), "
            "str(cudal2.__file__), get_family('sm80').template]))")
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    import json
    prompts, entries, package, _ = json.loads(out.stdout)
    from cudal2.library import manifest
    assert prompts.startswith(str(target)) and package.startswith(str(target))
    assert entries == len(manifest.read(ROOT / "kernels_out" / "sm90"))
