"""The product-path bench's bookkeeping (CPU): size bands, and what `--update` records for the
never-lose gate (an entry whose kernel did not run, or disagreed, gets no speedups: not served)."""

import json
import shutil
from pathlib import Path

from cudal2.library import Library, manifest
from cudal2.library import product_bench as pb

LIB = Path(__file__).resolve().parent.parent / "kernels_out" / "sm90"


def test_bands_follow_log2_flops():
    assert pb.band(64, 64, 64) == "below 2^30"
    assert pb.band(1024, 1024, 1024) == "2^30-2^35"
    assert pb.band(4096, 4096, 4096) == "2^36 and above"


def test_record_serves_only_entries_that_ran_agreed_and_won_everywhere(tmp_path):
    folder = tmp_path / "sm90"
    shutil.copytree(LIB, folder)
    a, b, c = manifest.read(folder)[:3]
    rows = [{"id": a.id, "kernel_ran": True, "agree": True, "eager": 1.3, "graph": 1.1, "flushed": 1.05},
            {"id": b.id, "kernel_ran": True, "agree": True, "eager": 1.3, "graph": 1.01, "flushed": 1.2},
            {"id": c.id, "kernel_ran": False, "agree": True, "eager": 1.3, "graph": 1.3, "flushed": 1.3}]
    assert pb.record(folder, rows) == 3
    served = {e.id for e in Library(folder, serve_margin=0.02).served}
    assert a.id in served and b.id not in served and c.id not in served
    kept = json.loads((folder / "manifest.json").read_text())
    assert kept["entries"][0]["measured"]["bench"]["kind"] == "product"


def test_geomeans_are_per_band_and_overall():
    rows = [{"band": "below 2^30", "eager": 2.0, "graph": 1.0, "flushed": 1.0},
            {"band": "below 2^30", "eager": 0.5, "graph": 1.0, "flushed": 1.0}]
    g = pb.geomeans(rows)
    assert abs(g["below 2^30"]["eager"] - 1.0) < 1e-12 and g["all"]["shapes"] == 2


def test_geomeans_keep_the_apis_apart_and_skip_a_mode_not_measured():
    rows = [{"band": "below 2^30", "eager": 2.0, "graph": 2.0, "flushed": 2.0},
            {"api": "cupy", "band": "below 2^30", "eager": 0.5, "graph": None, "flushed": 0.5}]
    torch_g, cupy_g = pb.geomeans(rows)["all"], pb.geomeans(rows, "cupy")["all"]
    assert torch_g["eager"] == 2.0 and torch_g["shapes"] == 1
    assert cupy_g["eager"] == 0.5 and "graph" not in cupy_g


def test_record_ignores_cupy_rows(tmp_path):
    folder = tmp_path / "sm90"
    shutil.copytree(LIB, folder)
    a = manifest.read(folder)[0]
    rows = [{"id": a.id, "api": "cupy", "kernel_ran": True, "agree": True, "eager": 9.0, "graph": 9.0, "flushed": 9.0}]
    assert pb.record(folder, rows) == 0
