"""`cudal2 library build`: rebuild a library folder's shipped binaries from its sources.

Guarantees: every entry's source is built with the flags and archs the entry records, when they are
ones a manifest may ask for (`recorded_build`: nvcc runs its stages through a shell, so a recorded
`-DZ=$(cmd)` ran cmd, and -ccbin or -Xcompiler name any program; review 46) and the source is
contract v2 (a launch spec: host code is compiled outside the compiler's sandbox; review 52), else
it is not built and is reported as failed, unchanged; a contract
v2 entry gets its cubin written beside the manifest, with its launch spec, and the manifest is
rewritten atomically. An entry whose rebuilt device hash differs from the recorded one (another
toolkit or host compiler) keeps its shipped binary when that is intact (report "kept": it is what
the judge verified); where it is missing or corrupt the rebuilt one is shipped and named in the
report ("changed"), and is not served until `cudal2 library bench --update` measures it (the bench
checks its output first): every speedup the entry keeps was measured on the old binary, and a source can
build to another kernel elsewhere (`#if __GNUC__ == 12`; review 44), so its measurements move to
`measured["before_rebuild"]`. Missing or corrupt binaries are what this repairs, so the
manifest is read without checking them. A `sass` entry (a reordered cubin) gets its recorded
schedule applied again to the rebuilt cubin (this needs the SASS tools). A source that no longer
builds to a cubin (contract v2) is reported as failed.

Does not: verify or time anything (no GPU needed), or touch sources.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from cudal2.config import BuildConfig
from cudal2.harness import trust
from cudal2.harness.build import build_all
from cudal2.library import manifest


# What a manifest may ask nvcc for. nvcc runs its stages through a shell, so a recorded flag
# reaches a shell's command line: `-DZ=$(cmd)` ran cmd (review 46); and -ccbin, -Xcompiler and the
# like hand the host compiler whatever they name. A recorded flag is one of these forms, or one of
# this machine's own configured flags (the user's, trusted); an arch is sm_ and digits.
_SAFE_FLAG = re.compile(r"-O[0-3]|-std=c\+\+(11|14|17|20|23)|-lineinfo|--generate-line-info|--expt-relaxed-constexpr"
                        r"|--expt-extended-lambda|--extended-lambda|-?-use_fast_math|--(ftz|prec-div|prec-sqrt|fmad)=(true|false)"
                        r"|-?-maxrregcount=\d{1,3}|-D[A-Za-z_]\w{0,63}(=[A-Za-z0-9_.+-]{0,64})?")
_SAFE_ARCH = re.compile(r"sm_\d{2,3}a?")


def recorded_build(e: manifest.Entry, cfg: BuildConfig) -> BuildConfig:
    """`cfg` with the flags and archs `e` records (this config's where it records none); ValueError
    naming the first one a manifest may not pass to the compiler."""
    flags, archs = e.build.get("flags", cfg.flags), e.build.get("archs", cfg.archs)
    if not (isinstance(flags, list) and all(isinstance(f, str) for f in flags)):
        raise ValueError(f"recorded flags {flags!r} are not a list of strings")
    if not (isinstance(archs, list) and archs and all(isinstance(a, str) for a in archs)):
        raise ValueError(f"recorded archs {archs!r} are not a list of strings")
    for f in flags:
        if f not in cfg.flags and not _SAFE_FLAG.fullmatch(f):
            raise ValueError(f"recorded flag {f[:80]!r} is not one a library rebuild passes to nvcc")
    for a in archs:
        if not _SAFE_ARCH.fullmatch(a):
            raise ValueError(f"recorded arch {a[:80]!r} is not an sm_ architecture")
    return dataclasses.replace(cfg, flags=list(flags), archs=list(archs))


def rebuild(folder: Path, cfg: BuildConfig, console) -> dict[str, list[str]]:
    entries = manifest.read(folder, check_binaries=False)
    report: dict[str, list[str]] = {"shipped": [], "changed": [], "kept": [], "failed": []}
    cfgs: dict[int, BuildConfig] = {}
    sources = {i: (folder / e.source).read_text() for i, e in enumerate(entries)}
    for i, e in enumerate(entries):
        try:
            c = recorded_build(e, cfg)
            # a source without a launch spec is v1 host code, which the build compiles open (no
            # sandbox, no memory limit: it trusts v1 as a user's own file); a manifest's source
            # is no user's file, and a library holds v2 entries only (review 52)
            if why := trust.refusal(sources[i], "untrusted", {}, e.problem()):
                raise ValueError(why)
            cfgs[i] = c
        except ValueError as err:   # never built: the entry stays as it is
            report["failed"].append(f"{e.id}: {err}")
    # One parallel build per distinct flag set.
    groups: dict[tuple, list[int]] = {}
    for i, c in cfgs.items():
        groups.setdefault((tuple(c.flags), tuple(c.archs)), []).append(i)
    results = {}
    for todo in groups.values():
        built = build_all([sources[i] for i in todo], cfgs[todo[0]], console)
        results.update(zip(todo, built))
    out = []
    for i, e in enumerate(entries):
        r = results.get(i)
        if r is None:
            pass   # refused above: its recorded build
        elif not r.ok:
            report["failed"].append(f"{e.id}: {r.reason}")
        elif r.kind != "cubin":
            report["failed"].append(f"{e.id}: built as {r.kind}, not a contract v2 cubin")
        else:
            data, sha = Path(r.lib_path).read_bytes(), r.device_sha256
            if e.provenance.get("kind") == "sass":
                try:
                    data = reapply_schedule(e, data)
                except Exception as err:  # noqa: BLE001  (no SASS tools here, or a schedule that no longer applies)
                    report["failed"].append(f"{e.id}: its recorded schedule could not be re-applied: {err}")
                    out.append(e)
                    continue
                sha = manifest.sha256_bytes(data)
            if sha != e.device_sha256 and _intact(folder, e):
                report["kept"].append(e.id)   # the binary the judge verified stays (this toolkit builds another)
                report["shipped"].append(e.id)
                out.append(e)
                continue
            name = f"{e.id}.cubin"
            (folder / name).write_bytes(data)
            measured = e.measured
            if sha != e.device_sha256:
                report["changed"].append(e.id)
                measured = unmeasured(e)
            e = dataclasses.replace(e, binary=name, spec=r.spec, device_sha256=sha, measured=measured,
                                    build={**e.build, "resources": r.resources})
            report["shipped"].append(e.id)
        out.append(e)
    manifest.write(folder, out)
    return report


def _intact(folder: Path, e: manifest.Entry) -> bool:
    """The entry's shipped binary is present and is the one its manifest pins."""
    path = folder / e.binary if isinstance(e.binary, str) else None
    return bool(path and path.is_file() and manifest.sha256_file(path) == e.device_sha256)


_SERVING = ("speedup", "bench", "bench_history")   # what `Entry.speedups` and `Entry.wins` read


def unmeasured(e: manifest.Entry) -> dict:
    """`e.measured` without what serves it (no speedups: `Entry.wins` is False), the old binary's
    measurements kept under "before_rebuild" with its device hash."""
    old = {k: e.measured[k] for k in _SERVING if k in e.measured}
    return {**{k: v for k, v in e.measured.items() if k not in _SERVING},
            "before_rebuild": {**old, "device_sha256": e.device_sha256}}


def reapply_schedule(e: manifest.Entry, parent_cubin: bytes) -> bytes:
    """A `sass` entry's binary from its source's rebuilt cubin: the recorded schedule (provenance
    `orders` of `kernel`) applied again, as `cudal2 sass` first applied it (a plain rebuild would
    put the instructions back in ptxas's order)."""
    from cudal2.sass.game import replay
    p = e.provenance
    return replay(parent_cubin, p["kernel"], p["orders"], p.get("max_latency"))
