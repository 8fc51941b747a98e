"""`cudal2 train` on the CPU with real components: a tiny offline model, TRL's GRPOTrainer, the
real reward service (which stops at the build here, and says so), checkpoints and resume."""

import json
from pathlib import Path

import pytest

from cudal2.config import Config
from cudal2.problem import Problem
from cudal2.rl.service import NO_GPU, RewardService
from cudal2.rl.tasks import matmul_tasks

from .conftest import KERNELS
from .llm_fixtures import tiny_model

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_model(tmp_path_factory.mktemp("tiny"))


def cfg(tmp: Path, **train) -> Config:
    return Config.load(build={"cache_dir": str(tmp / "cache")},
                       train={"num_generations": 2, "max_completion_length": 12, "save_steps": 1, **train})


def fenced(name: str) -> str:
    return "```cuda\n" + (KERNELS / name).read_text() + "\n```"


def test_the_reward_stops_at_the_build_on_a_cpu_and_says_so(tmp_path):
    svc = RewardService(cfg(tmp_path), gpu=False)
    p = Problem(64, 64, 64)
    broken = fenced("good/naive_v2.cu").replace("acc = fmaf(", "acc = fmaf((")
    parts = svc.score([fenced("good/naive_v2.cu"), fenced("good/naive_v2.cu"), broken, "no code here"], [p] * 4)
    assert parts[0].reward is None and parts[0].reason == NO_GPU and parts[0].compiled
    assert parts[1] is parts[0] and svc.judged == 2          # one build per distinct kernel
    assert parts[2].reward == svc.cfg.train.floor and parts[2].stage == "build"
    assert parts[3].reward == svc.cfg.train.floor and parts[3].stage == "parse"


def test_two_grpo_steps_of_stage_general_run_through_the_real_reward(tiny, tmp_path):
    from cudal2.rl.train import grpo
    out = tmp_path / "general"
    grpo(cfg(tmp_path), tiny, steps=2, output=out, service=RewardService(cfg(tmp_path), gpu=False), stage="general")
    steps = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if '"reward"' in x]
    assert [r["step"] for r in steps] == [1, 2]


def test_a_general_task_reward_stops_at_the_build_on_a_cpu(tmp_path):
    svc = RewardService(cfg(tmp_path), gpu=False)
    good = "```cuda\n" + (KERNELS / "tasks" / "relu_half_done.cu").read_text() + "\n```"
    parts = svc.score([good, good.replace("__hmax(", "__hmax((")], ["ew-relu", "ew-relu"])
    assert parts[0].reward is None and parts[0].reason == NO_GPU
    assert parts[1].reward == svc.cfg.train.floor and parts[1].stage == "build"


def test_the_held_out_split_is_fixed_by_the_shape():
    a, b = matmul_tasks(0.1), matmul_tasks(0.1)
    assert [t.split for t in a] == [t.split for t in b]
    assert 50 < sum(t.split == "heldout" for t in a) < 150


def test_two_grpo_steps_run_through_the_real_reward(tiny, tmp_path):
    from cudal2.rl.train import grpo
    out = tmp_path / "run"
    grpo(cfg(tmp_path), tiny, steps=2, output=out, service=RewardService(cfg(tmp_path), gpu=False))
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "reward" in r]
    assert [r["step"] for r in steps] == [1, 2]
    assert all("cudal2/compiled" in r and "cudal2/zero_spread_groups" in r for r in steps)
    assert (out / "checkpoint-2").is_dir() and (out / "final").is_dir()


def test_a_run_resumes_from_its_last_checkpoint(tiny, tmp_path):
    from cudal2.rl.train import grpo
    out = tmp_path / "run"
    grpo(cfg(tmp_path), tiny, steps=1, output=out, service=RewardService(cfg(tmp_path), gpu=False))
    t = grpo(cfg(tmp_path), tiny, steps=2, output=out, resume=True, service=RewardService(cfg(tmp_path), gpu=False))
    assert t.state.global_step == 2
    steps = [json.loads(x)["step"] for x in (out / "metrics.jsonl").read_text().splitlines() if "reward" in x]
    assert steps == [1, 2]   # step 1 was not run again


def test_sft_rows_are_verified_v2_renders(tmp_path):
    from cudal2.rl.train import sft_rows
    rows = sft_rows(cfg(tmp_path), 3)
    assert len(rows) == 3 and all("cudal2-launch" in r["completion"][0]["content"] for r in rows)


def test_sft_rows_give_each_shape_two_different_points_of_the_chosen_family(tmp_path):
    from cudal2.rl.train import sft_rows
    rows = sft_rows(cfg(tmp_path, sft_family="tiled"), 4)
    texts = [r["completion"][0]["content"] for r in rows]
    assert all('family "tiled"' in t for t in texts)
    assert rows[0]["prompt"] == rows[1]["prompt"] and texts[0] != texts[1]


def test_general_warm_start_rows_are_the_reference_solutions_of_training_tasks(tmp_path):
    from cudal2.rl.train import reference_rows
    rows = reference_rows(cfg(tmp_path), ["ew-relu", "ew-relu-squared"])   # the second is held out
    assert len(rows) == 1
    assert '"task": "ew-relu"' in rows[0]["completion"][0]["content"].replace("'", '"')


def test_training_tasks_can_be_limited_to_named_ones(tmp_path):
    from cudal2.rl.train import train_tasks
    got = train_tasks(cfg(tmp_path), 5, stage="general", only=["ew-relu", "ew-exp"])
    assert len(got) == 5 and {t.general for t in got} == {"ew-relu", "ew-exp"}
    with pytest.raises(ValueError, match="no training-split task"):
        train_tasks(cfg(tmp_path), 1, stage="general", only=["ew-relu-squared"])


def test_train_cli_errors_are_one_line(tmp_path):
    from typer.testing import CliRunner

    from cudal2.cli import app
    r = CliRunner().invoke(app, ["train", "--model", str(tmp_path / "nope"), "--output", str(tmp_path / "o")])
    assert r.exit_code != 0 and "no such folder" in r.output
    r = CliRunner().invoke(app, ["train", "--stage", "generl", "--model", "x"])
    assert r.exit_code != 0 and "choose sft, matmul or general" in r.output
    r = CliRunner().invoke(app, ["train", "--stage", "sft", "--sft-on", "gemm", "--model", "x"])
    assert r.exit_code != 0 and "choose matmul or general" in r.output


def test_plot_draws_the_reward_curve(tiny, tmp_path):
    from cudal2.rl.train import grpo, plot
    out = tmp_path / "run"
    grpo(cfg(tmp_path), tiny, steps=2, output=out, service=RewardService(cfg(tmp_path), gpu=False))
    assert plot(out).stat().st_size > 1000


def test_sft_trains_on_the_rendered_seeds(tiny, tmp_path):
    from cudal2.rl.train import sft
    out = tmp_path / "sft"
    t = sft(cfg(tmp_path), tiny, steps=2, output=out)
    assert t.state.global_step == 2 and (out / "final").is_dir()
    losses = [json.loads(x)["loss"] for x in (out / "metrics.jsonl").read_text().splitlines() if '"loss"' in x]
    assert len(losses) == 2 and all(v > 0 for v in losses)


def test_training_prompts_carry_generates_retrieval(tmp_path):
    from cudal2.rl.tasks import prompt, retriever_for
    c = cfg(tmp_path)
    t = matmul_tasks(0.1)[5]
    plain, retrieved = prompt(t, c), prompt(t, c, retriever=retriever_for(c))
    assert "Reference material" in retrieved[1]["content"] and "Reference material" not in plain[1]["content"]
    assert plain[0] == retrieved[0]   # one system prompt: the contract generate sends


def test_the_cli_trains_with_a_progress_display(tiny, tmp_path):
    from typer.testing import CliRunner

    from cudal2.cli import app
    (tmp_path / "c.toml").write_text(f'[build]\ncache_dir = "{tmp_path / "cache"}"\n'
                                     '[train]\nnum_generations = 2\nmax_completion_length = 8\nsave_steps = 1\n')
    r = CliRunner().invoke(app, ["train", "--stage", "matmul", "--model", tiny, "--steps", "1",
                                 "--output", str(tmp_path / "o"), "-c", str(tmp_path / "c.toml")])
    assert r.exit_code == 0, r.output[-2000:]
    assert (tmp_path / "o" / "final").is_dir() and "metrics.jsonl" in r.output


def test_the_cli_warm_starts_stage_general_on_its_reference_solutions(tiny, tmp_path):
    from typer.testing import CliRunner

    from cudal2.cli import app
    (tmp_path / "c.toml").write_text(f'[build]\ncache_dir = "{tmp_path / "cache"}"\n[train]\nsave_steps = 100\n')
    r = CliRunner().invoke(app, ["train", "--stage", "sft", "--sft-on", "general", "--model", tiny, "--steps", "1",
                                 "--output", str(tmp_path / "o"), "-c", str(tmp_path / "c.toml")])
    assert r.exit_code == 0, r.output[-2000:]
    assert (tmp_path / "o" / "final").is_dir()


def test_lora_trains_adapters_only(tiny, tmp_path):
    from cudal2.rl.train import grpo
    out = tmp_path / "run"
    t = grpo(cfg(tmp_path, lora_r=4), tiny, steps=1, output=out, service=RewardService(cfg(tmp_path), gpu=False))
    trainable = [n for n, p in t.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora" in n for n in trainable)
    assert (out / "final" / "adapter_config.json").exists()


def test_grpo_samples_with_the_configured_temperature_and_top_k(tiny, tmp_path):
    import torch

    from cudal2.rl.train import grpo
    out = tmp_path / "sampling"
    c = cfg(tmp_path, temperature=0.7, top_k=5, bf16=False)
    grpo(c, tiny, steps=1, output=out, service=RewardService(c, gpu=False))
    args = torch.load(out / "checkpoint-1" / "training_args.bin", weights_only=False)
    assert (args.temperature, args.top_k, args.bf16) == (0.7, 5, False)


def test_step_metrics_keep_the_later_record_of_a_step_a_resumed_run_logged_twice(tmp_path):
    from cudal2.rl.train import step_metrics
    rows = [{"step": 1, "reward": 0.0}, {"step": 2, "reward": 0.1}, {"step": 2, "reward": 0.3}, {"step": 3, "reward": 0.2},
            {"step": 3, "loss": 1.0}]
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert [(r["step"], r["reward"]) for r in step_metrics(tmp_path)] == [(1, 0.0), (2, 0.3), (3, 0.2)]
