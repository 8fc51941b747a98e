"""The `cudal2` command line: doctor, eval, baselines.

Guarantees: bad input (a malformed --mnk, K not a multiple of 8, a missing or unreadable file, a
kernel without the entry point, no GPU, a bad config) ends with one line on stderr and exit code
2, never a traceback; long work shows a progress bar; every printed number names its unit.

Does not: run candidate code in this process (see `harness/worker.py`).
"""

from __future__ import annotations

import importlib.util

import json
import re
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cudal2.config import Config, ConfigError
from cudal2.problem import ProblemError, load_shapes, parse_mnk

app = typer.Typer(add_completion=False, no_args_is_help=True, help="LLM-written HGEMM kernels, judged against cuBLAS.")
out = Console()
err = Console(stderr=True)


def fail(msg: str) -> None:
    err.print(f"[bold red]error:[/] {escape(msg)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def load_config(path: Optional[Path]) -> Config:
    try:
        return Config.load(path)
    except ConfigError as e:
        fail(str(e))


def need_gpu() -> str:
    from cudal2.harness.device import gpu_present
    why = gpu_present()
    if why:
        fail(f"{why}; this command needs an NVIDIA GPU (try `cudal2 doctor`)")
    import pynvml as nv
    h = nv.nvmlDeviceGetHandleByIndex(0)
    return f"{nv.nvmlDeviceGetName(h)}|{nv.nvmlSystemGetDriverVersion()}"


ConfigOpt = typer.Option(None, "--config", "-c", help="TOML config file (see cudal2/config.py for every key).")


@app.command()
def doctor() -> None:
    """Print what this machine has for cudal2, and how to fix what is missing."""
    from cudal2.doctor import checks
    t = Table(title="cudal2 doctor")
    t.add_column("component"); t.add_column("found"); t.add_column("fix")
    missing = 0
    for c in checks():
        missing += c.found is None
        t.add_row(c.name, c.found or "[red]missing[/]", "" if c.found else c.fix)
    out.print(t)
    out.print(f"{missing} missing" if missing else "everything found")


@app.command("eval")
def eval_cmd(kernel: Path = typer.Argument(..., help="A candidate .cu file (docs/kernel-contract.md)."),
             mnk: str = typer.Option(..., "--mnk", help="Shape M,N,K, e.g. 4096,4096,4096."),
             mode: str = typer.Option("both", help="offline, server or both."),
             profile: bool = typer.Option(False, "--profile", help="Also collect Nsight Compute metrics."),
             config: Optional[Path] = ConfigOpt,
             json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the result as JSON.")) -> None:
    """Build, verify and time one kernel file at one shape, beside cuBLAS and cuBLASLt."""
    try:
        p = parse_mnk(mnk)
    except ProblemError as e:
        fail(str(e))
    if mode not in ("offline", "server", "both"):
        fail(f"--mode must be offline, server or both, got {mode!r}")
    try:
        source = kernel.read_text()
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read kernel file {kernel}: {e.strerror if isinstance(e, OSError) else e}")
    from cudal2.harness.launch import SpecError, parse as parse_spec
    from cudal2.harness.policy import strip_comments_and_strings
    try:
        v2 = parse_spec(source) is not None
    except SpecError as e:
        fail(f"{kernel}: bad cudal2-launch spec: {e}")
    if not v2 and not re.search(r"\bcudal2_gemm\s*\(", strip_comments_and_strings(source)):
        fail(f"{kernel} has neither a cudal2-launch spec (contract v2) nor a cudal2_gemm entry point (v1); "
             "see docs/kernel-contract.md")
    cfg = load_config(config)
    cfg.timing.modes = ["offline", "server"] if mode == "both" else [mode]
    gpu = need_gpu()
    from cudal2.harness.evaluate import Candidate, Evaluator
    from cudal2.harness.store import Store
    ev = Evaluator(cfg, Store(cfg.run.db), gpu_name=gpu)
    try:
        with out.status(f"evaluating {kernel.name} at {p} (build, verify, time)..."):
            # The user's own file: trusted by them (v1 host code runs in a worker process of its own).
            (r,) = ev.evaluate([Candidate(kernel.name, source, trust="user")], p, profile=profile, reuse=False)
    finally:
        ev.close()
    from cudal2.report import result_table
    out.print(result_table(r))
    if json_out:
        json_out.write_text(r.to_json())
    raise typer.Exit(0 if r.ok else 1)


@app.command()
def baselines(shapes: Path = typer.Option(..., "--shapes", help="JSON list of [M, N, K] (or {'shapes': [...]})."),
              out_path: Path = typer.Option(Path("baselines.parquet"), "--out", help="Parquet file to write."),
              config: Optional[Path] = ConfigOpt) -> None:
    """Time cuBLAS (TN, NN), the cuBLASLt heuristic and cuBLASLt autotune over a shape list, both modes."""
    try:
        problems = load_shapes(shapes)
    except ProblemError as e:
        fail(str(e))
    cfg = load_config(config)
    gpu = need_gpu()
    from cudal2.baselines_run import run_baselines
    from cudal2.report import baselines_table
    df = run_baselines(problems, cfg, out, gpu, out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(out_path)
    out.print(baselines_table(df))
    out.print(f"wrote {out_path} ({len(df)} rows)")


@app.command()
def generate(mnk: Optional[str] = typer.Option(None, "--mnk", help="One shape M,N,K."),
             shapes: Optional[Path] = typer.Option(None, "--shapes", help="JSON list of shapes (resumes where it stopped)."),
             model: Optional[Path] = typer.Option(None, "--model", help="A Hugging Face decoder's config.json: search "
                                                  "its layers' GEMMs (q/k/v/o, gate/up/down, LM head) at the --m counts."),
             m: Optional[str] = typer.Option(None, "--m", help="With --model: token counts M, e.g. 1,16,128,2048."),
             budget_minutes: Optional[float] = typer.Option(None, "--budget-minutes", help="Per shape; default from config."),
             families: Optional[str] = typer.Option(None, "--families", help="Comma list, e.g. sm80,sm90."),
             llm: Optional[str] = typer.Option(None, "--llm", help="openai:<model>, vllm:<model-or-path> or hf:<model-or-path>."),
             missing_only: bool = typer.Option(False, "--missing-only", help="Skip shapes the library already has an entry for."),
             build_only: bool = typer.Option(False, "--build-only",
                                             help="No GPU: admit each shape's next round as pending candidates "
                                                  "and build them into the cache."),
             config: Optional[Path] = ConfigOpt) -> None:
    """Search for kernels faster than cuBLAS at the given shape(s); winners go to the kernel library."""
    if sum(x is not None for x in (mnk, shapes, model)) != 1:
        fail("give exactly one of --mnk M,N,K, --shapes FILE or --model CONFIG.json (with --m)")
    if (model is None) != (m is None):
        fail("--model and --m go together: --model CONFIG.json --m 1,16,128,2048")
    try:
        if model is not None:
            from cudal2.model_shapes import model_problems, parse_ms
            problems = model_problems(model, parse_ms(m))
        else:
            problems = [parse_mnk(mnk)] if mnk else load_shapes(shapes)
    except ProblemError as e:
        fail(str(e))
    cfg = load_config(config)
    if budget_minutes is not None:
        cfg.search.budget_minutes = positive_minutes(budget_minutes)
    if families:
        cfg.search.families = [f.strip() for f in families.split(",") if f.strip()]
    if llm is not None:
        cfg.llm.backend = llm
    from cudal2.llm.base import LLMError, make_backend
    try:
        make_backend(cfg.llm)  # fail now, in one line, not after the first round
    except LLMError as e:
        fail(str(e))
    from cudal2.kernels import families as known
    bad = [f for f in cfg.search.families if f not in known()]
    if bad:
        fail(f"unknown kernel famil{'y' if len(bad) == 1 else 'ies'} {', '.join(bad)}; known: {', '.join(sorted(known()))}")
    if build_only:
        from cudal2.search.run import run_prebuild
        raise typer.Exit(run_prebuild(problems, cfg, out))
    gpu = need_gpu()
    from cudal2.search.run import run_generate
    raise typer.Exit(run_generate(problems, cfg, gpu, out, missing_only))


from cudal2.llm.serve import serve_command  # noqa: E402  (light: imports the model only when run)

app.command("serve", help="Serve a local Hugging Face model through an OpenAI-compatible API on loopback.")(serve_command)

library_app = typer.Typer(no_args_is_help=True, help="Inspect, verify and benchmark the kernel library.")
app.add_typer(library_app, name="library")
LibOpt = typer.Option(None, "--root", help="Library folder (default: the package's kernels_out/).")
ArchOpt = typer.Option(None, "--arch", help="Architecture folder, e.g. sm90 (default: this GPU's).")


def positive_minutes(budget_minutes: float) -> float:
    """--budget-minutes, or a one-line exit: nan and inf too (review 43: nan ran unbounded)."""
    if not 0 < budget_minutes < float("inf"):
        fail("--budget-minutes must be a positive number")
    return budget_minutes


def existing_folder(root: Optional[Path], arch: Optional[str]) -> Path:
    """The library folder --root and --arch name, or a one-line exit where there is none (a mistyped
    --root or --arch listed an empty library, or had `library build` create one; review 43)."""
    from cudal2.library import LibraryError, folder
    try:
        where = folder(root, arch)
    except LibraryError as e:
        fail(str(e))
    if not where.is_dir():
        fail(f"no library folder {where}: check --root and --arch")
    return where


def open_library(root: Optional[Path], arch: Optional[str]):
    from cudal2.library import LibraryError, Library
    if arch is None:
        from cudal2.harness.device import gpu_present
        why = gpu_present()
        if why:
            fail(f"{why}; name the library's architecture with --arch (e.g. --arch sm90)")
    where = existing_folder(root, arch)
    try:
        return Library(where)
    except LibraryError as e:
        fail(str(e))


@library_app.command("ls")
def library_ls(root: Optional[Path] = LibOpt, arch: Optional[str] = ArchOpt) -> None:
    """List the library's entries."""
    lib = open_library(root, arch)
    from cudal2.report import library_table
    out.print(library_table(lib))


@library_app.command("show")
def library_show(entry_id: str, root: Optional[Path] = LibOpt, arch: Optional[str] = ArchOpt) -> None:
    """Show one entry: its measurements, provenance and source file."""
    lib = open_library(root, arch)
    match = [e for e in lib.entries if e.id == entry_id or e.id.startswith(entry_id)]
    if len(match) != 1:
        fail(f"no single entry matches {entry_id!r} ({len(match)} do)")
    import json
    e = match[0]
    out.print_json(json.dumps({**e.__dict__, "source_path": str(lib.folder / e.source)}, default=str))


@library_app.command("build")
def library_build(root: Optional[Path] = LibOpt, arch: Optional[str] = ArchOpt,
                  config: Optional[Path] = ConfigOpt,
                  dispatcher: bool = typer.Option(True, help="Also compile the C++ dispatcher for this torch "
                                                  "(about a minute; what torch calls run through).")) -> None:
    """Rebuild the library's shipped binaries (contract v2 cubins) from their sources, keeping an intact
    shipped one where this toolkit builds another, and the compiled dispatcher; no GPU needed."""
    from cudal2.library import LibraryError
    where = existing_folder(root, arch)
    try:
        from cudal2.library.rebuild import rebuild
        from cudal2.report import plain
        report = rebuild(where, load_config(config).build, out)
    except LibraryError as e:
        fail(str(e))
    out.print(f"{len(report['shipped'])} binaries shipped in {where}; {len(report['failed'])} failed")
    for line in report["failed"]:
        err.print(f"  build failed: {plain(line)}", highlight=False)
    if report["kept"]:
        out.print(f"{len(report['kept'])} entries keep their shipped binary: this toolkit builds other device code "
                  "from their sources (the shipped one is what the judge verified)")
    if report["changed"]:
        out.print(f"[yellow]device code changed for {len(report['changed'])} entries (another toolkit?): not "
                  f"served until `cudal2 library bench --update` on a GPU verifies and measures them[/]")
    if dispatcher:
        try:
            import torch  # noqa: F401
        except ImportError:
            fail("the compiled dispatcher needs torch: install it, or pass --no-dispatcher")
        from cudal2.library import dispatch
        with out.status("compiling the dispatcher"):
            try:
                path = dispatch.build()
            except LibraryError as e:
                fail(str(e))
        out.print(f"dispatcher built: {path}")
    raise typer.Exit(1 if report["failed"] else 0)


@library_app.command("verify")
def library_verify(root: Optional[Path] = LibOpt, arch: Optional[str] = ArchOpt, config: Optional[Path] = ConfigOpt) -> None:
    """Re-run the harness's checks on every entry's shipped cubin, on this GPU (no timing)."""
    lib = open_library(root, arch)
    cfg = load_config(config)
    gpu = need_gpu()
    from cudal2.library.bench import verify_entries
    bad = verify_entries(lib, cfg, gpu, out)
    raise typer.Exit(1 if bad else 0)


@library_app.command("bench")
def library_bench(root: Optional[Path] = LibOpt, arch: Optional[str] = ArchOpt, config: Optional[Path] = ConfigOpt,
                  json_out: Optional[Path] = typer.Option(None, "--json", help="Write every result as JSON lines."),
                  kernel: bool = typer.Option(False, "--kernel", help="The kernel-only view instead: every entry "
                                              "through the harness, beside the baselines."),
                  served: bool = typer.Option(False, "--served", help="Product path as a user gets it: only what the "
                                              "manifest serves (default: every entry, to decide what to serve)."),
                  limit: int = typer.Option(0, help="Only the first N entries (0: all)."),
                  shapes: Optional[Path] = typer.Option(None, "--shapes", help="Also measure these shapes (a JSON "
                                                        "shapes file, as for generate), entry or not: e.g. "
                                                        "eval/dev_shapes.json."),
                  update: bool = typer.Option(False, "--update", help="Write the measured speedups into the manifest: "
                                              "dispatch serves only entries that win there."),
                  cupy: bool = typer.Option(False, "--cupy", help="Also cudal2.matmul on cupy arrays against "
                                            "cupy.matmul (eager, graph where cupy can capture, flushed)."),
                  resume: bool = typer.Option(False, "--resume", help="Keep the rows already in the --json file "
                                              "(a run cut short) and measure only the shapes they lack."),
                  new: bool = typer.Option(False, "--new", help="Only the entries no product bench has measured "
                                           "yet (what `cudal2 generate` just published); with --update, the "
                                           "others' records stay as they are.")) -> None:
    """The product path: `cudal2.linear` against F.linear in a fresh process, eager, CUDA graph and a
    single flushed call, paired rounds, geomeans per size band (`--kernel`: the harness's view)."""
    lib = open_library(root, arch)
    cfg = load_config(config)
    listed: list[tuple[int, int, int]] = []   # the --shapes list, for its own geomean row
    if shapes is not None:
        try:   # a bad file is one line here, not a traceback in the bench's process
            listed = [(q.M, q.N, q.K) for q in load_shapes(shapes)]
        except ProblemError as e:
            fail(str(e))
    if resume and (json_out is None or kernel):
        fail("--resume continues a product bench's --json file: give --json FILE (not with --kernel)")
    if new and kernel:
        fail("--new picks entries for the product bench: not with --kernel")
    gpu = need_gpu()
    if kernel:
        from cudal2.library.bench import bench_entries, record_bench
        results = bench_entries(lib, cfg, gpu, out, json_out)
        n = record_bench(lib.folder, results) if update else 0
    else:
        import subprocess
        import sys
        import tempfile
        from cudal2.library import product_bench as pb
        dest = json_out or Path(tempfile.mkdtemp()) / "product.jsonl"
        cmd = [sys.executable, "-m", "cudal2.library.product_bench", str(lib.folder), str(dest),
               *(["--served"] if served else []), *(["--limit", str(limit)] if limit else []),
               *(["--shapes", str(shapes)] if shapes else []), *(["--cupy"] if cupy else []),
               *(["--resume"] if resume else []), *(["--new"] if new else [])]
        if subprocess.run(cmd).returncode != 0:   # a fresh process: what a new user's first run sees
            fail("the product bench failed (see above)")
        lines = [json.loads(x) for x in dest.read_text().splitlines() if x.strip()]
        rows = [r for r in lines if "band" in r]
        from cudal2.report import product_table
        summary = next((r for r in lines if r.get("summary")), {})
        for api in ("torch", "cupy") if cupy else ("torch",):
            out.print(product_table(rows, pb.geomeans(rows, api, listed), summary, api))
        n = pb.record(lib.folder, rows) if update and not served else 0
    if update:
        from cudal2.library import Library, manifest
        for line in manifest.settle(lib.folder, cfg.library.serve_margin):
            out.print(f"standby settled: {line}")
        kept = len(Library(lib.folder, serve_margin=cfg.library.serve_margin).served)
        out.print(f"manifest updated for {n} entries; {kept} win by {cfg.library.serve_margin:.0%} or more in every mode "
                  f"on the median of this bench and the {manifest.HISTORY} before it, lost in none, and are served")


@app.command()
def sass(entry: Optional[str] = typer.Option(None, "--entry", help="A library entry id (or a unique prefix)."),
         all_: bool = typer.Option(False, "--all", help="Every entry that ships a cubin, sm80 family first."),
         agent: str = typer.Option("greedy", help="greedy, anneal or ppo."),
         budget_minutes: float = typer.Option(5.0, "--budget-minutes", help="Search time per entry, in minutes "
                                              "(the bitwise check and the judge come on top)."),
         min_gain: float = typer.Option(0.01, "--min-gain", help="A schedule counts only if it is this much faster "
                                        "(0.01: 1%) in two separate paired measurements."),
         max_latency: Optional[int] = typer.Option(None, "--max-latency", help="Cycles: let the checker shrink a "
                                                   "stall distance down to this (default: never shrink one)."),
         publish: bool = typer.Option(True, help="Write a verified, reproduced winner into the library."),
         json_out: Optional[Path] = typer.Option(None, "--json", help="Also append every outcome as a JSON line."),
         root: Optional[Path] = LibOpt,
         arch: str = typer.Option("sm90", "--arch", help="Architecture folder (the game knows sm_90 SASS only)."),
         config: Optional[Path] = ConfigOpt) -> None:
    """The assembly game: reorder the SASS of library cubins, keep a schedule only if it is faster twice,
    bit-identical to the original on the GPU and passes the judge (then it becomes a `sass` entry)."""
    from cudal2.sass.agents import AGENTS
    from cudal2.sass.run import SassError, play, select
    if agent not in AGENTS:
        fail(f"--agent {agent!r}: choose one of {', '.join(AGENTS)}")
    if agent == "ppo" and importlib.util.find_spec("torch") is None:
        fail("--agent ppo needs torch (pip install torch); greedy and anneal do not")
    positive_minutes(budget_minutes)
    if max_latency is not None and max_latency < 1:
        fail("--max-latency must be a positive number of cycles")
    lib = open_library(root, arch)
    if not lib.entries:
        fail(f"no library entries in {lib.folder} (no manifest.json there, or an empty one)")
    try:
        entries = select(lib.entries, entry, all_)
    except SassError as e:
        fail(str(e))
    cfg = load_config(config)
    from cudal2.sass import tools
    for tool in ("nvdisasm", "cuobjdump"):
        try:
            tools.require(tool)
        except tools.ToolMissing as e:
            fail(str(e))
    gpu = need_gpu()
    from cudal2.sass.run import Outcome
    t = Table(title=f"cudal2 sass ({agent}, {budget_minutes:g} min per entry)")
    for col in ("entry", "status", "gain", "again", "moved instr.", "checked / rejected", "measured",
                "GPU fail", "GPU min"):
        t.add_column(col)
    gains, gpu_s = [], 0.0
    for e in entries:
        with out.status(f"{e.id}: playing ({agent})..."):
            try:
                o = play(e, lib.folder, cfg, gpu, agent, budget_minutes * 60, min_gain, max_latency, publish)
            except Exception as err:  # noqa: BLE001  one entry's failure is reported; the others still run
                o = Outcome(e.id, "error", f"{type(err).__name__}: {(str(err).splitlines() or [''])[0][:300]}")
        gpu_s += o.gpu_s
        st = o.agent.get("stats", {})
        pct = lambda x: "-" if x is None else f"{x:+.2%}"  # noqa: E731
        t.add_row(e.id, o.status + (f" ({o.new_id})" if o.new_id else ""), pct(o.agent.get("gain")),
                  pct(o.agent.get("gain_repeat")), str(o.agent.get("displaced", 0)),
                  f"{st.get('checked', 0)} / {st.get('rejected', 0)}", str(st.get("measured", 0)),
                  str(st.get("gpu_failed", 0)), f"{o.gpu_s / 60:.1f}")
        if o.detail:
            out.print(f"{escape(e.id)}: {escape(o.detail)}", highlight=False)
        if o.agent.get("reproduced"):
            gains.append(min(o.agent["gain"], o.agent["gain_repeat"]))
        if json_out:
            with json_out.open("a") as f:
                f.write(json.dumps({**o.__dict__, "gpu": gpu}, default=str) + "\n")
    out.print(t)
    if gains:
        import math
        geo = math.exp(sum(math.log1p(g) for g in gains) / len(gains)) - 1
        out.print(f"{len(gains)} of {len(entries)} entries reproduced a gain: geomean {geo:+.2%}, largest "
                  f"{max(gains):+.2%} (the smaller of the two measurements)")
    out.print(f"GPU time: {gpu_s / 60:.1f} min")


train_app = typer.Typer(help="GRPO fine-tuning of the kernel writer with TRL, rewarded by the judge.")
app.add_typer(train_app, name="train")


@train_app.callback(invoke_without_command=True)
def train(ctx: typer.Context,
          stage: str = typer.Option("matmul", help="sft (warm start on verified kernels), matmul (GRPO on HGEMM "
                                    "shapes) or general (GRPO on the non-GEMM task suite)."),
          model: Optional[str] = typer.Option(None, help="A Hugging Face model name or local folder."),
          steps: int = typer.Option(30, min=1, help="Optimizer steps."),
          output: Path = typer.Option(Path("runs/train"), help="Checkpoints, metrics.jsonl and the final model."),
          resume: bool = typer.Option(False, help="Continue from the latest checkpoint in --output."),
          trace: Optional[Path] = typer.Option(None, help="sft: a generate trace (JSON lines) to add verified "
                                               "completions from."),
          sft_on: str = typer.Option("matmul", "--sft-on", help="sft: warm start for stage matmul (sm80 renders and "
                                     "the trace) or for stage general (the task suite's reference solutions)."),
          config: Optional[Path] = ConfigOpt) -> None:
    """Train: `cudal2 train --stage sft|matmul|general --model NAME_OR_PATH [--steps N] [--output DIR] [--resume]`."""
    if ctx.invoked_subcommand:
        return
    if stage not in ("sft", "matmul", "general"):
        fail(f"--stage {stage!r}: choose sft, matmul or general")
    if sft_on not in ("matmul", "general"):
        fail(f"--sft-on {sft_on!r}: choose matmul or general")
    if not model:
        fail("--model: name a Hugging Face model or a local folder (e.g. Qwen/Qwen2.5-Coder-7B-Instruct)")
    try:
        import trl  # noqa: F401
    except ImportError:
        fail("training needs the train extra: pip install -e '.[train]'")
    cfg = load_config(config)
    from cudal2.rl import train as T
    if resume and T.last_checkpoint(output) is None:
        fail(f"--resume: no checkpoint in {output}")
    if model.startswith(("/", ".", "~")) and not Path(model).expanduser().is_dir():
        fail(f"--model {model}: no such folder")
    run = T.sft if stage == "sft" else T.grpo
    from cudal2.rl.tasks import retriever_for
    with out.status("building the retrieval index (as generate does)"):
        kw = {"retriever": retriever_for(cfg), "progress": True}
    if stage == "sft":
        kw["trace"] = trace
        if sft_on == "general":
            from cudal2.rl.tasks import general_tasks
            kw["tasks"] = [t.general for t in general_tasks() if t.split == "train"]
    else:
        kw["stage"] = stage
    try:
        run(cfg, str(Path(model).expanduser()) if Path(model).expanduser().is_dir() else model, steps, output,
            resume=resume, **kw)
    except OSError as e:   # a hub name that cannot be fetched here, a folder that is not a model
        fail(f"--model {model}: cannot load it ({str(e).splitlines()[0][:200]})")
    out.print(f"done: {output / 'final'}; metrics in {output / 'metrics.jsonl'} (plot: cudal2 train plot --output {output})")


@train_app.command("plot")
def train_plot(output: Path = typer.Option(Path("runs/train"), help="A training run's folder.")) -> None:
    """Draw the reward curve and the compiled/verified fractions of a run into <output>/reward.png."""
    if not (output / "metrics.jsonl").exists():
        fail(f"no metrics.jsonl in {output}")
    from cudal2.rl.train import plot
    out.print(f"wrote {plot(output)}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
