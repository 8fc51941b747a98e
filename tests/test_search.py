"""The search loop on CPU: dedupe, resume, budgets, and garbage proposals costing only themselves.

Candidates here fail at policy or build, which needs no GPU; the engine, population and store
are the real ones."""

from cudal2.harness.evaluate import Evaluator, result_key
from cudal2.harness.store import Store
from cudal2.library import manifest
from cudal2.library.manifest import Entry
from cudal2.problem import Problem
from cudal2.result import EvalResult, Stage
from cudal2.search.engine import Search
from cudal2.search.population import Population, normalized_hash
from cudal2.search.proposers import Proposal

P = Problem(64, 64, 64)
# Untrusted sources: v2 (a launch spec) that does not compile, and v2 with a forbidden header.
SPEC = '/* cudal2-launch {{"kernels": [{{"name": "k", "grid": [1], "block": [32], "args": ["C"]}}]}} */\n'
GARBAGE = SPEC + "this is not CUDA {n}"
FORBIDDEN = SPEC + "#include <thread>\n// variant {n}\n"


class ListProposer:
    """Proposes from a fixed list of texts, in order (the real proposers are tested elsewhere)."""
    name = "list"

    def __init__(self, texts):
        self.texts = list(texts)
        self.calls = 0

    def propose(self, p, pop, n, rng):
        self.calls += 1
        out = []
        while self.texts and len(out) < n:
            out.append(Proposal(f"c{len(self.texts)}", self.texts.pop(0), self.name))
        return out


class Boom:
    name = "boom"

    def propose(self, p, pop, n, rng):
        raise RuntimeError("model server down")


def make(cfg, proposers, tmp_path):
    cfg.search.batch, cfg.search.max_candidates = 2, 6
    store = Store(cfg.run.db)
    return Search(cfg, store, Evaluator(cfg, store), proposers, tmp_path / "lib")


def test_cosmetic_edits_are_duplicates():
    assert normalized_hash("int  x; // a\n") == normalized_hash("int x;   /* b */")


def test_sources_that_differ_in_their_directives_are_not_duplicates():
    body = "__global__ void k() {}\n"
    launch = '/* cudal2-launch {"kernels": [{"name": "k", "grid": [%d, 1, 1]}]} */\n'
    assert normalized_hash(launch % 1 + body) != normalized_hash(launch % 2 + body)
    assert normalized_hash("// cudal2-shapes: M=1..64\n" + body) != normalized_hash("// cudal2-shapes: M=1..128\n" + body)
    assert normalized_hash(launch % 1 + "/* x */" + body) == normalized_hash(launch % 1 + body)


def test_the_comment_stripper_agrees_with_the_regex_it_replaced_and_is_linear():
    import random
    import re
    import time

    from cudal2.search.population import _strip_comments
    old = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)   # the oracle, where every /* it meets closes
    rng = random.Random(7)
    for _ in range(3000):
        t = "".join(rng.choice(["a", " ", "\n", "/", "*", "//", "/*", "*/", "x;"]) for _ in range(30))
        if "/*" not in old.sub(" ", t):   # the regex left no opening unclosed
            assert _strip_comments(t).split() == old.sub(" ", t).split()
    t0 = time.monotonic()
    _strip_comments("/* x " * 40000)   # 8,000 unclosed openings took 2.4 s with the regex
    assert time.monotonic() - t0 < 0.5


def test_population_admits_a_source_once(cfg):
    pop = Population(cfg.run.db)
    assert pop.add(P, "a", "src", "h", "", {}, None, "t", 1) is not None
    assert pop.add(P, "b", "src  ", "h", "", {}, None, "t", 1) is None


def test_garbage_costs_only_its_candidates(cfg, tmp_path):
    s = make(cfg, [ListProposer([GARBAGE.format(n=i) for i in range(3)] + [FORBIDDEN.format(n=0)]), Boom()], tmp_path)
    (out,) = s.run([P])
    assert out.evaluated == 4 and out.verified == 0
    assert out.stages == {"build": 3, "policy": 1}
    s.ev.close()


def test_budget_caps_the_candidates(cfg, tmp_path):
    s = make(cfg, [ListProposer([GARBAGE.format(n=i) for i in range(20)])], tmp_path)
    (out,) = s.run([P])
    assert out.evaluated == 6
    s.ev.close()


def test_exhausted_shape_is_skipped_on_resume(cfg, tmp_path):
    s = make(cfg, [ListProposer([GARBAGE.format(n=i) for i in range(2)])], tmp_path)
    s.run([P])
    again = ListProposer([GARBAGE.format(n=9)])
    s2 = make(cfg, [again], tmp_path)
    (out,) = s2.run([P])
    assert again.calls == 0 and out.evaluated == 2


def test_pending_candidates_are_judged_first_on_resume(cfg, tmp_path):
    """A run killed after admitting candidates but before judging them."""
    store = Store(cfg.run.db)
    pop = Population(cfg.run.db)
    src = GARBAGE.format(n="pending")
    pop.add(P, "orphan", src, store.put_source(src), "", {}, None, "list", 1)
    s = make(cfg, [ListProposer([])], tmp_path)
    (out,) = s.run([P])
    assert out.evaluated == 1 and [m.status for m in pop.members(P)] == ["done"]


def test_round_budget_stops_the_search(cfg, tmp_path):
    s = make(cfg, [ListProposer([GARBAGE.format(n=i) for i in range(20)])], tmp_path)
    cfg.search.max_rounds = 2
    (out,) = s.run([P])
    assert out.evaluated == 4  # two rounds of two
    s.ev.close()


def test_round_budget_counts_the_rounds_of_earlier_runs(cfg, tmp_path):
    cfg.search.max_rounds = 1
    make(cfg, [ListProposer([GARBAGE.format(n=i) for i in range(20)])], tmp_path).run([P])
    cfg.search.max_rounds = 2
    (out,) = make(cfg, [ListProposer([GARBAGE.format(n=i) for i in range(20, 40)])], tmp_path).run([P])
    assert out.evaluated == 4 and Population(cfg.run.db).last_round(P) == 2


def test_a_shape_stopped_by_a_budget_goes_on_when_the_budget_is_raised(cfg, tmp_path):
    make(cfg, [ListProposer([GARBAGE.format(n=i) for i in range(20)])], tmp_path).run([P])  # stops at 6
    s = make(cfg, [ListProposer([GARBAGE.format(n=i) for i in range(20, 40)])], tmp_path)
    cfg.search.max_candidates = 8
    (out,) = s.run([P])
    assert out.evaluated == 8


def test_pending_candidates_are_judged_even_past_the_budget(cfg, tmp_path):
    """A round admitted by `--build-only` (or a killed run) is judged although the budget is spent."""
    s = make(cfg, [ListProposer([GARBAGE.format(n=i) for i in range(2)])], tmp_path)
    cfg.search.max_rounds = 1
    batch, _ = s.next_round(P)
    assert [m.status for m, _, _ in batch] == ["pending", "pending"]
    (out,) = make(cfg, [ListProposer([GARBAGE.format(n=9)])], tmp_path).run([P])
    assert out.evaluated == 2 and not Population(cfg.run.db).members(P, "pending")


class FreshEvaluator:
    """Stands in for the GPU at publish time: a fresh measurement returns the score given for the
    candidate's name (the engine's decision is under test here, not the harness)."""
    gpu_name = ""

    def __init__(self, scores, cubin):
        self.scores, self.calls, self.cubin = scores, [], cubin

    def evaluate(self, cands, p, reuse=True, **kw):
        self.calls.append(([c.name for c in cands], reuse))
        return [_ok(p, self.scores[c.name], self.cubin) for c in cands]


CUBIN = b"the judged cubin"   # the manifest checks bytes against hashes; nothing loads them here


def _ok(p, s, cubin=""):
    return EvalResult("x", "h", p.M, p.N, p.K, stage=Stage.DONE, ok=True, speedup={"offline": {"vendor_default": s}},
                      build={"kind": "cubin", "lib_path": cubin, "spec": {"kernels": []},
                             "device_sha256": manifest.sha256_bytes(CUBIN)})


def _publish_with(cfg, tmp_path, fresh):
    """Library entry 'old' scored 1.30 when published; the search's best 'new' scored 1.25 (both
    maxima over short measurements); `fresh` gives what each measures now."""
    lib = tmp_path / "lib"
    lib.mkdir()
    old_src = "// old kernel\n"
    (lib / "old.cu").write_text(old_src)
    (lib / "old.cubin").write_bytes(CUBIN)
    built = tmp_path / "built.cubin"
    built.write_bytes(CUBIN)
    manifest.write(lib, [Entry(id="old", M=P.M, N=P.N, K=P.K, family="sm80", params={}, provenance={}, source="old.cu",
                               source_sha256=manifest.sha256_text(old_src), device_sha256=manifest.sha256_bytes(CUBIN),
                               build={}, measured={"score": 1.30}, gpu={}, date="2026-11-22", binary="old.cubin",
                               spec={"kernels": []})])
    store, pop, src = Store(cfg.run.db), Population(cfg.run.db), "// new kernel\n"
    mid = pop.add(P, "new", src, store.put_source(src), "sm80", {}, None, "template", 1)
    pop.record(mid, True, "done", 1.25, "")
    store.put(result_key(src, P, cfg, ""), _ok(P, 1.25, str(built)))
    ev = FreshEvaluator(fresh, str(built))
    s = Search(cfg, store, ev, [], lib)
    return s._publish(P, pop.best(P)[0]), manifest.read(lib), ev.calls


def test_publish_measures_the_best_afresh_beside_the_entry_and_both_fresh_scores_decide(cfg, tmp_path):
    published, entries, calls = _publish_with(cfg, tmp_path, {"new": 1.05, "old": 1.00})
    assert calls == [(["new", "old"], False)]
    assert published and [e.score for e in entries] == [1.05]


def test_publish_keeps_the_entry_when_the_best_does_not_hold_up(cfg, tmp_path):
    published, entries, _ = _publish_with(cfg, tmp_path, {"new": 0.95, "old": 1.00})
    assert not published and [e.id for e in entries] == ["old"]
