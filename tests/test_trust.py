"""Trust levels: untrusted sources are device code only; host code only from verified renders and users."""

from pathlib import Path

import pytest

from cudal2.harness.evaluate import Candidate, Evaluator
from cudal2.harness.trust import refusal
from cudal2.kernels.family import Limits, get_family
from cudal2.library import manifest
from cudal2.problem import Problem

from .conftest import KERNELS

P = Problem(4096, 4096, 4096)
V1 = (KERNELS / "good" / "naive.cu").read_text()


def point(family: str) -> dict:
    return get_family(family).valid_points(P, Limits())[0]


def test_untrusted_host_code_is_refused():
    assert "untrusted" in refusal(V1, "untrusted", {}, P)


def test_users_own_host_code_is_admitted():
    assert refusal(V1, "user", {}, P) is None


def test_a_verbatim_template_render_is_admitted():
    params = point("sm90")
    src = get_family("sm90").render(params, P)
    assert refusal(src, "template", {"family": "sm90", "params": params}, P) is None


def test_an_edited_template_render_is_refused():
    params = point("sm90")
    src = get_family("sm90").render(params, P) + "\n// one more line\n"
    assert "verbatim" in refusal(src, "template", {"family": "sm90", "params": params}, P)


def test_v2_needs_no_trust():
    src = get_family("sm80").render(point("sm80"), P)
    assert refusal(src, "untrusted", {}, P) is None


def test_untrusted_host_code_stops_at_the_policy_stage_without_a_build(cfg):
    ev = Evaluator(cfg)
    (r,) = ev.evaluate([Candidate("naive.cu", V1)], Problem(64, 64, 64))
    assert not r.ok and r.stage.value == "policy" and "untrusted" in r.reason
    assert ev.worker._proc is None  # nothing was started, let alone loaded


@pytest.mark.parametrize("e", manifest.read(Path(__file__).parent.parent / "kernels_out" / "sm90"), ids=lambda e: e.id)
def test_every_library_entry_is_admitted_as_what_it_claims(e):
    src = (Path(__file__).parent.parent / "kernels_out" / "sm90" / e.source).read_text()
    c = Candidate.of_entry(e, src)
    assert refusal(c.source, c.trust, c.provenance, Problem(e.M, e.N, e.K)) is None
