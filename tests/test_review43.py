"""Review 43: candidate input that crashed the general stage's reward path (see each test)."""

import pytest

from cudal2.harness import build

from .conftest import needs_nvcc


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


# --- the policy's comment and string stripper: linear in a line's length ----------------------
# Every quote searched back to its line's start and matched the include regex over the line's
# leading blanks: 40,000 blanks then 20,000 empty strings took 3.3 s (quadratic) in the build of
# every contract-v2 candidate.

def _strip_oracle(source: str) -> str:
    """The stripper before review 43 (quadratic), as the oracle of its verdicts."""
    import re
    out, i, n = [], 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in source[i:j])); i = j
        elif c in "\"'":
            line_start = source.rfind("\n", 0, i) + 1
            if c == '"' and re.match(r"\s*#\s*include\b", source[line_start:i]):
                j = source.find('"', i + 1) + 1 or n
                out.append(source[i:j]); i = j
                continue
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + (c if j - i >= 2 else "")); i = j
        else:
            out.append(c); i += 1
    return "".join(out)


@pytest.mark.timeout(60)
def test_stripping_a_long_line_of_blanks_and_quotes_is_linear():
    import time
    from cudal2.harness.policy import check_device_only
    src = " " * 40_000 + '""' * 20_000 + "\n"
    t0 = time.monotonic()
    check_device_only(src)
    assert time.monotonic() - t0 < 0.5


def test_the_stripper_agrees_with_its_oracle():
    import random
    from cudal2.harness.policy import strip_comments_and_strings
    rng = random.Random(43)
    parts = ['"', "'", "\\", "\n", " ", "\t", "#", "include", "#include", ' #  include "a.h"', "<x.h>", "//",
             "/*", "*/", "x", "includex", "#include'", '"\n']
    for _ in range(3000):
        s = "".join(rng.choice(parts) for _ in range(rng.randint(0, 30)))
        assert strip_comments_and_strings(s) == _strip_oracle(s), repr(s)


# --- an unclosed launch block: no v1 file from a completion; the v1 stream rule linear --------
# A completion whose `/* cudal2-launch` had no `*/` passed the parser (it looked for the opening
# alone), built as a v1 file, and policy.check's `<<<(.*?)>>>` rescanned to the end from each
# unclosed `<<<`: 20,000 of them took 32 s of Python in one build thread of the reward service.

def test_a_completion_whose_launch_block_is_unclosed_is_a_parse_error():
    from cudal2.llm.parse import ParseError, candidate_source
    with pytest.raises(ParseError):
        candidate_source("```cuda\n__global__ void k() {}\n/* cudal2-launch {\"kernels\": []}\n```\n", "full", None)


@pytest.mark.timeout(60)
def test_the_stream_rule_is_linear_in_unclosed_launches():
    import time
    from cudal2.harness.policy import check
    t0 = time.monotonic()
    check("<<<" * 20_000 + "\n")
    assert time.monotonic() - t0 < 2


def test_the_stream_rule_finds_what_its_regex_found():
    import random
    import re
    from cudal2.harness.policy import _launches
    rng = random.Random(43)
    for _ in range(3000):
        s = "".join(rng.choice(["<<<", ">>>", "<", ">", ",", "x", "\n"]) for _ in range(rng.randint(0, 25)))
        assert _launches(s) == [(m.start(), m.group(1)) for m in re.finditer(r"<<<(.*?)>>>", s, re.S)], repr(s)
