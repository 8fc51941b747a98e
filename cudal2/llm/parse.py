"""Turning a model's completion into a candidate source, in the two output modes.

Guarantees:
- full mode: the completion must hold exactly one fenced code block tagged cuda/cu/c++/cpp
  (an untagged block is accepted when it is the only one); zero or several is a `ParseError`, and
  so is a block without a `/* cudal2-launch ... */` comment (a contract v2 file must carry its
  launch spec; whether the spec is valid is the harness's call, at the policy stage);
- diff mode: one or more SEARCH/REPLACE blocks, applied in order to the parent; a SEARCH text
  that does not occur in the (partly edited) parent exactly once is a `ParseError` that names the
  block, so the failure goes back to the model as feedback; nothing is ever skipped silently;
- the error messages are one paragraph, fit to quote in the next prompt;
- a completion that is not valid Unicode (a lone surrogate) is a `ParseError`, never another exception.

Does not: judge the code (the harness does).
"""

from __future__ import annotations

import re

from cudal2.harness.launch import blocks as launch_blocks   # as the launch spec's parser finds them

_CODE_TAGS = {"cuda", "cu", "c++", "cpp", "cxx", "c"}


class ParseError(ValueError):
    """The completion cannot become a source file; the message says why, for the model."""


def _fences(text: str) -> list[tuple[str, str]]:
    r"""(tag, body) of each fenced block, left to right, in linear time: what the regex
    ```([\w+-]*)[^\n]*\n(.*?)``` (re.S) finds. The regex backtracked over its tag line
    (`[\w+-]*[^\n]*`: a 64,000-character word after ``` took 5 s, quadratic; review 40) and
    rescanned to the end from every unclosed opening. Here a failed opening ends the search: any
    later one has no later line end or closing fence either."""
    out, i = [], 0
    while (start := text.find("```", i)) >= 0:
        nl = text.find("\n", start + 3)
        end = text.find("```", nl + 1) if nl >= 0 else -1
        if end < 0:
            break
        out.append((re.match(r"[\w+-]*", text[start + 3:nl]).group(), text[nl + 1:end]))
        i = end + 3
    return out


_SEARCH, _DIVIDER, _REPLACE = "<<<<<<< SEARCH\n", "=======\n", ">>>>>>> REPLACE"   # an edit block's marks


def _upto(text: str, start: int, mark: str) -> tuple[int, int] | None:
    r"""(end of the text before the first `mark` at or after `start`, less one newline just before
    it; the index after `mark`), or None: what `(.*?)\n?<mark>` matches from `start`."""
    q = text.find(mark, start)
    if q < 0:
        return None
    return (q - 1 if q > start and text[q - 1] == "\n" else q), q + len(mark)


def _edit_blocks(text: str) -> list[tuple[str, str]]:
    r"""(search, replace) of each SEARCH/REPLACE block, left to right, in linear time: what the
    regex <<<<<<< SEARCH\n(.*?)\n?=======\n(.*?)\n?>>>>>>> REPLACE (re.S) finds. The regex
    rescanned to the end from every unclosed opening (8,500 openings, 127,000 characters: 17 s,
    quadratic, the twin of the fences' review 40 found). An opening whose parts are missing ends
    the search: every later opening lacks them too."""
    out, i = [], 0
    while (start := text.find(_SEARCH, i)) >= 0:
        g1 = start + len(_SEARCH)
        if not (mid := _upto(text, g1, _DIVIDER)) or not (end := _upto(text, mid[1], _REPLACE)):
            break
        out.append((text[g1:mid[0]], text[mid[1]:end[0]]))
        i = end[1]
    return out


def full_file(completion: str) -> str:
    blocks = _fences(completion)
    code = [body for tag, body in blocks if tag.lower() in _CODE_TAGS]
    if not code and len(blocks) == 1:
        code = [blocks[0][1]]
    if not code:
        raise ParseError("no fenced ```cuda block found: answer with the complete .cu file in one ```cuda block")
    if len(code) > 1:
        raise ParseError(f"{len(code)} fenced code blocks found: answer with exactly one ```cuda block holding the whole file")
    # a closed block (what launch.parse reads): an opening with no `*/` after it left the file
    # without a spec, a v1 file whose host-code rules ran on candidate text (policy.check's stream
    # rule rescanned to the end from each of 20,000 `<<<`: 32 s in one build; review 43)
    if not launch_blocks(code[0]):
        raise ParseError("the code block has no /* cudal2-launch {...} */ comment: the complete file holds the "
                         "extern \"C\" __global__ kernels and, in that block comment, the JSON launch spec that "
                         "lists them (no host code, no cudal2_gemm)")
    return code[0]


def apply_edits(parent: str, completion: str) -> str:
    blocks = _edit_blocks(completion)
    if not blocks:
        raise ParseError("no SEARCH/REPLACE block found: use <<<<<<< SEARCH / ======= / >>>>>>> REPLACE blocks")
    text = parent
    for i, (search, replace) in enumerate(blocks, 1):
        if not search.strip():
            raise ParseError(f"SEARCH block {i} is empty: quote the exact parent lines to replace")
        count = text.count(search)
        if count != 1:
            first = search.strip().splitlines()[0][:80]
            where = "does not occur" if count == 0 else f"occurs {count} times"
            raise ParseError(f"SEARCH block {i} (starting {first!r}) {where} in the parent: SEARCH text must match "
                             "exactly one place, character for character")
        text = text.replace(search, replace, 1)
    return text


def candidate_source(completion: str, mode: str, parent: str | None) -> str:
    # Every later step writes and hashes the source as UTF-8: a lone surrogate (a JSON '\\ud800'
    # escape decodes to one) raised UnicodeEncodeError out of RewardService.score, taking the whole
    # reward batch with it (review 41).
    try:
        completion.encode()
    except UnicodeEncodeError as e:
        raise ParseError(f"the completion is not valid Unicode text ({e.reason} at character {e.start})") from None
    if mode == "diff":
        if parent is None:
            raise ParseError("diff mode needs a parent source")
        return apply_edits(parent, completion)
    return full_file(completion)
