"""Trust levels: which sources may keep host code.

Guarantees: `refusal(candidate, p)` is None when the candidate may be built under its contract,
otherwise a one-line reason (recorded at the policy stage). A source with a launch spec is
contract v2, device code only, and needs no trust. A source without one is v1 host code and is
admitted only when
- its trust is "user" (a user's own file, given to `cudal2 eval`: they vouch for it), or
- its trust is "template" and it equals, character for character, the render of the family
  template named in its provenance from the parameters recorded there, at the shape being judged
  (so an edited render, or a file that only claims to be one, is refused).
Everything else, every LLM completion included, is "untrusted".

Does not: look inside v2 device code (the build checks the cubin), or run anything.
"""

from __future__ import annotations

from typing import Any

from cudal2.harness import launch
from cudal2.problem import Problem

TRUST_LEVELS = ("untrusted", "template", "user")


def refusal(source: str, trust: str, provenance: dict[str, Any], p: Problem) -> str | None:
    if trust not in TRUST_LEVELS:
        return f"unknown trust level {trust!r}"
    try:
        if launch.parse(source) is not None:
            return None   # v2: the build checks the spec
    except launch.SpecError:
        return None       # v2 with a bad spec: the build says what is wrong with it
    if trust == "user":
        return None
    if trust == "template":
        return _render_mismatch(source, provenance, p)
    return ("host code from an untrusted source: write contract v2 (device code plus a /* cudal2-launch {...} */ "
            "spec, see docs/kernel-contract.md); v1 host code is accepted only from template renders and users' "
            "own files")


def _render_mismatch(source: str, provenance: dict[str, Any], p: Problem) -> str | None:
    from cudal2.kernels.family import get_family
    family, params = provenance.get("family"), provenance.get("params")
    if not family or not isinstance(params, dict):
        return "claims to be a template render but names no family and parameters"
    try:
        fam = get_family(family)
        expected = fam.render(fam.complete(params), p)
    except Exception as e:  # a bad family name or parameter set is the claim's failure
        return f"claims to be a render of {family} {params}, which does not render: {e}"
    if expected != source:
        return f"not a verbatim render of family {family} with its recorded parameters at {p} (edited?)"
    return None
