"""The timeline probe (eval/timeline_probe.py) finds its anchors in every scheduler's render: each
consumer records a unit's start, its mainloop's end and its epilogue's start, the end of its unit
loop, and the kernel its entry and setup; a render it cannot place them in stops the probe instead
of timing a kernel with no timestamps; the PDL probe (eval/pdl_probe.py) puts its grid-dependency
wait after the setup and before the first load. Text only (both probes run on the GPU)."""

import sys
from pathlib import Path

import pytest

from cudal2.kernels.sm90raw import Sm90Raw
from cudal2.problem import Problem

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "eval"))
import timeline_probe  # noqa: E402

FAM = Sm90Raw()
BASE = dict(BM=128, BN=256, CONSUMERS=2, STAGES=3, GROUP_M=8, EPI="tma", CLUSTER=1, SPLIT_K=1)


@pytest.mark.parametrize("extra", [dict(SCHED="tiles"), dict(SCHED="hybrid"), dict(SCHED="tiles", CLUSTER=2),
                                   dict(SCHED="hybrid", EPI="direct", STAGES=4), dict(SCHED="pingpong", BN=128)],
                         ids=["tiles", "hybrid", "cluster", "hybrid-direct", "pingpong"])
def test_every_scheduler_gets_its_timestamps(extra):
    src = timeline_probe.instrument(FAM.render(FAM.complete({**BASE, **extra}), Problem(4096, 4096, 4096)))
    body = src.split("// ================= consumer warpgroups =================")[1]
    for ev in ("TL(0)", "TL(1)", "TL(2)", f"TL_AT({timeline_probe.UNITS}, 0"):
        assert ev in body, ev
    assert src.count("cudal2_now()") >= 6 - (extra.get("EPI") == "direct")   # no TMA store wait: no exit event
    if extra["SCHED"] == "hybrid":
        assert "flag_release(flags + slot * CONSUMERS + c);\n                TL(2);" in body   # a tail's publish


def test_a_render_without_its_anchors_stops_the_probe():
    src = FAM.render(FAM.complete({**BASE, "SCHED": "tiles"}), Problem(4096, 4096, 4096))
    with pytest.raises(SystemExit):
        timeline_probe.instrument(src.replace("wgmma_wait<0>();", "wgmma_wait<0 >();"))


@pytest.mark.parametrize("cluster", [1, 2])
def test_the_pdl_probe_waits_after_the_setup_and_before_any_load(cluster):
    import pdl_probe
    src = pdl_probe.with_griddepcontrol(
        FAM.render(FAM.complete({**BASE, "SCHED": "tiles", "CLUSTER": cluster}), Problem(4096, 4096, 4096)))
    wait = src.index("griddepcontrol.wait;")
    assert src.index("fence.mbarrier_init") < wait < src.index("================= producer warpgroup")
    assert wait < src.index("tma_load_2d(sA") and src.count("griddepcontrol.wait;") == 1
