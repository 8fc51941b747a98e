"""The warm-L2 probe (eval/warm_probe.py) measures what it says: distinct structures in prior order,
and library folders the library reads back, the i-th point of every shape in folder i. On the CPU
(nvcc builds sm_90a here); the measuring half needs the GPU."""

import importlib.util
from pathlib import Path

from cudal2.config import Config
from cudal2.kernels.family import Limits, get_family
from cudal2.library import manifest
from cudal2.problem import Problem

_spec = importlib.util.spec_from_file_location("warm_probe", Path(__file__).parent.parent / "eval" / "warm_probe.py")
warm_probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(warm_probe)


def test_pick_takes_one_point_per_structure_best_prior_first():
    fam, lim, p = get_family("stream"), Limits(), Problem(16, 3584, 3584)
    got = warm_probe.pick(fam, p, lim, 6)
    assert len(got) == 6
    assert len({fam.structure(x) for x in got}) == 6
    priors = [fam.prior(x, p, lim) for x in got]
    assert priors == sorted(priors, reverse=True)
    assert priors[0] == max(fam.prior(x, p, lim) for x in fam.valid_points(p, lim))


def test_folders_hold_the_ith_point_of_each_shape_and_read_back(tmp_path):
    cfg = Config.load(build={"cache_dir": str(tmp_path / "cache")})
    shapes = [Problem(1, 3584, 3584), Problem(16, 1024, 8192)]
    placed = warm_probe.folders(shapes, 2, cfg, tmp_path / "lib")
    assert sorted(placed) == [0, 1]
    for i, pts in placed.items():
        entries = manifest.read(tmp_path / "lib" / f"p{i}")   # sources, cubins and hashes checked
        assert sorted((e.M, e.N, e.K) for e in entries) == sorted((p.M, p.N, p.K) for p in shapes)
        assert {e.id for e in entries} == {x["id"] for x in pts}
    first = {x["shape"]: x["params"] for x in placed[0]}
    fam, lim = get_family("stream"), Limits()
    assert first[str(shapes[0])] == warm_probe.pick(fam, shapes[0], lim, 1)[0]
