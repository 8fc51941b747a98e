"""The reference kernels of stage general (CPU): one contract-v2 file per task under
cudal2/rl/references/, with a header that names its technique, device-only includes, a launch spec
in its task's vocabulary that resolves for the task's sizes (and for awkward ones), kernel
signatures whose parameter types match the spec's arguments, and a build with the project's
builder that uses no local memory (no spills, no stack). The GPU check is
tests/test_gpu_task_judge.py."""

import dataclasses
import re
from pathlib import Path

import pytest

from cudal2.config import Config
from cudal2.harness import launch, policy
from cudal2.harness.build import build_many, nvcc_version
from cudal2.rl.general import BY_ID, SUITE

REFS = Path(__file__).resolve().parents[1] / "cudal2" / "rl" / "references"
ALL = [t.id for t in SUITE]
CTYPE = {"f16": "__half", "bf16": "__nv_bfloat16", "f32": "float", "i32": "int", "i64": "long long"}


def source(task_id: str) -> str:
    return (REFS / f"{task_id}.cu").read_text()


def test_every_task_has_exactly_one_reference_file():
    assert sorted(p.stem for p in REFS.glob("*.cu")) == sorted(ALL)


@pytest.mark.parametrize("task_id", ALL)
def test_file_exists_names_its_technique_and_passes_the_device_only_policy(task_id):
    path = REFS / f"{task_id}.cu"
    assert path.is_file(), path
    src = source(task_id)
    assert src.startswith(f"// {task_id}:"), "the header comment starts with the task id"
    assert "technique" in src.split("cudal2-launch")[0].lower(), "the header names the technique"
    assert policy.check_device_only(src, ()) == []


@pytest.mark.parametrize("task_id", ALL)
def test_spec_parses_in_the_task_vocabulary_and_resolves_for_its_sizes(task_id):
    spec = launch.parse(source(task_id))
    assert spec is not None and spec.task == task_id
    task = BY_ID[task_id]
    assert set(spec.vocab.scalars) == set(task.sizes) and not spec.vocab.tmaps
    launches = spec.resolve_sizes(dict(task.sizes))
    assert launches and all(r.smem <= 227 * 1024 for r in launches)
    assert spec.workspace_for(dict(task.sizes)) == 0


def _awkward(task) -> list[dict]:
    """All ones, sizes that are not multiples of the 8-element vector, and a larger-than-default row
    (attn-rope's d stays 2 x half)."""
    ones = {k: 1 for k in task.sizes}
    odd = {k: (v // 16) + 3 if v > 64 else v + 1 for k, v in task.sizes.items()}
    wide = {k: (2 * v + 5 if k in ("cols", "dim", "n") else v) for k, v in task.sizes.items()}
    for s in (ones, odd, wide):
        if "half" in s:
            s["d"] = 2 * s["half"]
    return [ones, odd, wide]


@pytest.mark.parametrize("task_id", ALL)
def test_spec_resolves_for_awkward_sizes(task_id):
    spec = launch.parse(source(task_id))
    for sizes in _awkward(BY_ID[task_id]):
        assert spec.resolve_sizes(sizes), sizes


def _signature(src: str, name: str) -> list[str]:
    code = policy.strip_comments_and_strings(src)
    m = re.search(r'extern\s+"\s*"\s+__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?' + name + r"\s*\(([^)]*)\)",
                  code)
    assert m, f'no extern "C" __global__ {name}'
    return [re.sub(r"\s+", " ", p.replace("__restrict__", "")).strip() for p in m.group(1).split(",")]


@pytest.mark.parametrize("task_id", ALL)
def test_kernel_parameters_match_the_spec_arguments(task_id):
    """A buffer is a pointer to its dtype (const for an input), a size or an int is an int."""
    src = source(task_id)
    spec = launch.parse(src)
    task = BY_ID[task_id]
    buffers = {b.name: (b, True) for b in task.inputs} | {b.name: (b, False) for b in task.outputs}
    assert {a for k in spec.kernels for a in k.args if isinstance(a, str) and a in buffers} == set(buffers)
    for k in spec.kernels:
        params = _signature(src, k.name)
        assert len(params) == len(k.args), (k.name, params, k.args)
        for p, a in zip(params, k.args):
            if isinstance(a, str) and a in buffers:
                b, is_input = buffers[a]
                want = ("const " if is_input else "") + CTYPE[b.dtype] + "*"
                assert re.fullmatch(re.escape(want) + r" ?\w+", p), (k.name, a, p)
            else:
                assert isinstance(a, dict) and "int" in a or a in task.sizes, (k.name, a)
                assert re.fullmatch(r"(const )?int \w+", p), (k.name, a, p)


_FUNC = re.compile(r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, "
                   r"(\d+) bytes spill loads")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """Every file built once, in parallel (about 1 s each; the level-3 GEMMs longer)."""
    if not nvcc_version(Config().build.nvcc):
        pytest.skip("nvcc not available")
    cfg = dataclasses.replace(Config().build, cache_dir=str(tmp_path_factory.mktemp("cache")))
    have = [t for t in ALL if (REFS / f"{t}.cu").is_file()]
    return dict(zip(have, build_many([source(t) for t in have], cfg)))


@pytest.mark.parametrize("task_id", ALL)
def test_builds_to_a_cubin_without_local_memory(task_id, built):
    assert task_id in built, "no file"
    r = built[task_id]
    assert r.ok, f"{r.stage}: {r.reason}\n{r.log[-3000:]}"
    assert r.kind == "cubin"
    names = {k.name for k in launch.parse(source(task_id)).kernels}
    entries = {e.split("@")[0]: v for e, v in r.resources.items()}
    assert names <= set(entries), (names, set(entries))
    for name in names:
        v = entries[name]
        assert v["spill_stores"] == v["spill_loads"] == v["stack"] == 0, (name, v)
    for fn, stack, stores, loads in _FUNC.findall(r.log):   # device functions too, not only entries
        assert int(stack) == int(stores) == int(loads) == 0, fn
