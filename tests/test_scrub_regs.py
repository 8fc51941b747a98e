"""The register scrub's machine code writes every register ptxas allots a thread at 32 (R0..R29: the
top two, R30/R31, are never allotted) and every predicate, and the uniform scrub's every uniform
register ptxas allots (UR4..UR61) and every uniform predicate, and the wide scrub R0..R61 at 64 a
thread: read from the SASS that nvcc's ptxas and NVRTC (which builds it in the judge) emit for the
guard source, with the judge's options."""

import pytest

pytest.importorskip("cupy")
from cudal2.harness import guards  # noqa: E402
from cudal2.sass import disasm  # noqa: E402

from . import harness_builds  # noqa: E402
from .harness_builds import COMPILERS  # noqa: E402


@pytest.fixture(scope="module", params=COMPILERS)
def listings(request, tmp_path_factory) -> dict[str, disasm.Listing]:
    return harness_builds.listings(request.param, guards._SRC, "sm_90", guards._OPTIONS, tmp_path_factory.mktemp("scrub"))


def _writes(listing: disasm.Listing) -> set[str]:
    return set().union(*(x.writes for x in listing.instrs if x.pred in ("", "@PT")))


@pytest.fixture(scope="module")
def scrub_writes(listings) -> set[str]:
    return _writes(listings["cudal2_scrub_regs"])


def test_the_register_scrub_writes_r0_to_r29(scrub_writes):
    assert {f"R{i}" for i in range(guards.REG_WORDS)} <= scrub_writes


def test_the_wide_register_scrub_writes_r0_to_r61_at_64_a_thread(listings):
    wide = listings["cudal2_scrub_regs_wide"]
    assert {f"R{i}" for i in range(guards.WIDE_WORDS + 2)} <= _writes(wide)


def test_the_register_scrub_writes_every_predicate(scrub_writes):
    assert {f"P{i}" for i in range(7)} <= scrub_writes


@pytest.fixture(scope="module")
def uniform_writes(listings) -> set[str]:
    return _writes(listings["cudal2_scrub_uniform"])


def test_the_uniform_scrub_writes_every_uniform_register_ptxas_allots(uniform_writes):
    assert {f"UR{i}" for i in range(4, 62)} <= uniform_writes, sorted(uniform_writes)


def test_the_uniform_scrub_writes_every_uniform_predicate(uniform_writes):
    assert {f"UP{i}" for i in range(7)} <= uniform_writes


def test_no_generating_or_checking_kernel_touches_local_memory(listings):
    # (a local frame holds what the kernel computed there, keys and drawn values, for the next
    # launch's never-written frame to show: the outlier modes' generator, inlined into the prep
    # kernel, gave it a 16-byte frame until it moved to cudal2_fill alone, review 74. The scrubs
    # write local memory by design, and the local scrub clears the window after them)
    local = {name for name, lst in listings.items() if not name.startswith("cudal2_scrub")
             if any(x.base in ("STL", "LDL") for x in lst.instrs)}
    assert not local
