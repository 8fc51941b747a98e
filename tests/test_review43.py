"""Review 43: candidate input that crashed the general stage's reward path (see each test)."""

import shutil

import pytest

from cudal2.harness import build


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def _relu_with(line: str) -> str:
    from pathlib import Path
    import cudal2.rl as rl
    src = (Path(rl.__file__).parent / "references" / "ew-relu.cu").read_text()
    return src.replace("#include <cstdint>", "#include <cstdint>\n" + line)


# --- compiler output that is not UTF-8 --------------------------------------------------------
# `#pragma message("\xff")` makes nvcc print a raw 0xff byte; the strict decode of its output
# raised UnicodeDecodeError out of build(), build_many and RewardService.score: one completion
# killed its whole reward batch.

@needs_nvcc
@pytest.mark.timeout(300)
def test_a_build_whose_compiler_output_is_not_utf8_returns_a_result(cfg):
    res = build.build(_relu_with('#pragma message("\\xff\\xfe")'), cfg.build)
    assert isinstance(res, build.BuildResult)


@needs_nvcc
@pytest.mark.timeout(300)
def test_the_reward_service_scores_a_batch_with_such_a_completion(cfg):
    from cudal2.rl.service import RewardService
    bad = "```cuda\n" + _relu_with('#pragma message("\\xff")') + "```\n"
    parts = RewardService(cfg, gpu=False).score([bad, "no code"], ["ew-relu", "ew-relu"])
    assert len(parts) == 2 and parts[1].reward == cfg.train.floor


def test_a_tool_whose_output_is_not_utf8_returns_text(tmp_path, monkeypatch):
    from cudal2.sass import tools
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\nprintf 'a\\377b\\n'\n")
    script.chmod(0o755)
    monkeypatch.setattr(tools, "require", lambda name: str(script))
    assert tools.run("nvdisasm", []).startswith("a")
