import json

import pytest

from cudal2.problem import M_MODULUS, Problem, ProblemError, load_shapes, parse_claim, parse_mnk


@pytest.mark.parametrize("text", ["4096,4096,4096", "4096x4096x4096", " 4096, 4096 ,4096 "])
def test_parse_mnk_accepts_common_forms(text):
    assert parse_mnk(text) == Problem(4096, 4096, 4096)


@pytest.mark.parametrize("text", ["", "1,2", "1,2,3,4", "a,b,c", "-8,8,8", "8.0,8,8", "0,8,8"])
def test_parse_mnk_rejects_malformed(text):
    with pytest.raises(ProblemError):
        parse_mnk(text)


def test_k_must_be_a_multiple_of_8():
    with pytest.raises(ProblemError, match="multiple of 8"):
        parse_mnk("64,64,60")


def test_floor_takes_the_larger_bound():
    p = Problem(64, 8192, 8192)           # bandwidth-bound: 134 MB of B
    assert p.floor_s(1e15, 3e12) == pytest.approx(p.min_bytes / 3e12)
    q = Problem(8192, 8192, 8192)         # compute-bound
    assert q.floor_s(1e15, 3e12) == pytest.approx(q.flops / 1e15)


def test_load_shapes_reads_both_forms(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([[64, 64, 64]]))
    b.write_text(json.dumps({"shapes": [[64, 64, 64], [128, 256, 512]]}))
    assert load_shapes(a) == [Problem(64, 64, 64)]
    assert len(load_shapes(b)) == 2


def test_load_shapes_names_the_bad_entry(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps([[64, 64, 64], [64, 64, 12]]))
    with pytest.raises(ProblemError, match="entry 1"):
        load_shapes(f)


def test_claim_without_declaration_covers_everything():
    assert parse_claim("int x;").covers(Problem(3, 5, 8))


def test_exact_claim_covers_only_its_shapes():
    c = parse_claim("// cudal2-shapes: 4096x4096x4096, 128x4096x4096\n")
    assert c.covers(Problem(128, 4096, 4096)) and not c.covers(Problem(256, 4096, 4096))


def test_range_claim_is_verified_in_full_at_its_ends():
    c = parse_claim("// cudal2-shapes: M=64-4096 N=4096 K=4096\n")
    full, _ = c.verification_shapes(Problem(128, 4096, 4096))
    assert {p.M for p in full} == {128, 64, 4096}


def test_range_claim_covers_every_residue_class_of_each_tile():
    c = parse_claim("// cudal2-shapes: M=64-4096 N=4096 K=4096\n")
    full, light = c.verification_shapes(Problem(128, 4096, 4096), [128, 96])
    ms = {p.M for p in full + light}
    for t in (128, 96):
        assert {m % t for m in ms} == set(range(t))
    assert all(64 <= m <= 4096 for m in ms)


def test_a_declared_tile_of_one_does_not_shrink_the_residue_coverage():
    # A kernel may not choose how thoroughly its M-range is checked: the judge's modulus stays.
    c = parse_claim("// cudal2-shapes: M=1-512 N=64 K=64\n")
    full, light = c.verification_shapes(Problem(257, 64, 64), [1])
    assert {p.M % M_MODULUS for p in full + light} == set(range(M_MODULUS))


def test_range_verification_points_are_drawn_afresh():
    c = parse_claim("// cudal2-shapes: M=1-8192 N=64 K=64\n")
    draws = {tuple(sorted(p.M for p in c.verification_shapes(Problem(8, 64, 64))[1])) for _ in range(3)}
    assert len(draws) == 3


def test_unreadable_claim_is_an_error():
    with pytest.raises(ProblemError, match="cannot read"):
        parse_claim("// cudal2-shapes: big ones\n")
