"""The one typed configuration of cudal2, validated on load and passed whole to every worker.

Guarantees: every field has exactly one default, written here and nowhere else, and a help
text; `Config.load` rejects unknown keys, wrong types and out-of-range values with a
`ConfigError` naming the key; a `Config` pickles, so worker processes receive it whole (no
field is copied by hand across the process boundary).

Does not: read environment variables (except where a field says so) or probe the GPU.

Example:

    from cudal2.config import Config
    cfg = Config.load("cudal2.toml")       # or Config() for the defaults
    cfg.verify.error_ratio                   # 1.25
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints


class ConfigError(ValueError):
    """A config file or value is invalid; the message names the key."""


def _f(default: Any, help: str, **check: Any) -> Any:
    """A field with its help text and optional bounds (`ge`, `gt`, `le`, `choices`)."""
    meta = {"help": help, **check}
    if isinstance(default, list):
        return field(default_factory=lambda d=default: list(d), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class BuildConfig:
    nvcc: str = _f("nvcc", "The nvcc executable.")
    archs: list[str] = _f(["sm_90a"], "Target architectures; each becomes -gencode=arch=compute_X,code=sm_X.",
                          each_choices=["sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a"])
    flags: list[str] = _f(["-O3", "-std=c++17", "-lineinfo", "--expt-relaxed-constexpr"],
                         "Extra nvcc flags for every candidate (-lineinfo lets Nsight Compute map source lines).")
    timeout_s: float = _f(300.0, "A build still running after this many seconds is killed and fails.", gt=0)
    max_memory_mb: int = _f(4096, "Address space each compiler process of a contract v2 (untrusted) build may take, "
                                  "in MiB; past it the build fails (an honest v2 build takes about 100 MiB).", gt=0)
    jobs: int = _f(0, "Parallel builds; 0 means one per CPU core.", ge=0)
    cache_dir: str = _f("", "Build cache folder; empty means $XDG_CACHE_HOME/cudal2/build (~/.cache/...).")
    extra_headers: list[str] = _f([], "Headers allowed beyond the contract's allow-list (exact names or 'prefix/*').")
    sandbox: str = _f("auto", "Run a contract v2 (untrusted) build's compiler in a sandbox that shows it only the "
                              "toolkit, the allowed headers and its build folder: 'on' refuses to build where it "
                              "cannot run, 'auto' then builds without it and warns once, 'off' never uses it.",
                      choices=["auto", "on", "off"])


@dataclass
class VerifyConfig:
    gaussian_trials: int = _f(3, "Trials with fresh random inputs in the gaussian stage: a Gaussian, a positive-mean, "
                                 "a cancelling one and three of real data's ranges (guards' modes 4-9), then more "
                                 "Gaussian ones (at least the first six always run).", ge=1)
    error_ratio: float = _f(1.25, "A candidate's relative Frobenius error may be at most this multiple of cuBLAS's own "
                                  "error against the float64 reference, in the Gaussian and cancelling trials and every "
                                  "later full check (honest fp32 accumulation in any order measured 0.99-1.01 on the "
                                  "H100; fp16 partial sums of 16 or 32 terms 1.35-1.49 on Gaussian inputs).", gt=1.0)
    uniform_error_ratio: float = _f(2.0, "The bound in the positive-mean trial instead, where fp32 sums in different "
                                         "orders drift apart with K (honest kernels: 1.09 at K=16384) while fp16 "
                                         "accumulation exceeds it many times over.", gt=1.0)
    max_error_ratio: float = _f(8.0, "Its largest element error may be at most this multiple of cuBLAS's largest.", gt=1.0)
    repeat_calls: int = _f(3, "Consecutive calls in the repeat stage, each with new contents in the same buffers.", ge=2)
    carry_calls: int = _f(4, "Most identical calls, through the same pointers with C and the workspace left as the "
                             "last call left them (as the library leaves them), before one more on A with one "
                             "element moved; their number is drawn in [1, this] for each judging. Then this to "
                             "twice this many calls, each on the next of three A and C buffers in turn with new A "
                             "contents, the workspace still kept (as a model's forward pass calls the library).",
                          ge=1)
    light_carried: int = _f(3, "Interior M values of an M-range (its light shapes) also given the carried calls, "
                               "drawn afresh for each judging.", ge=0)
    determinism_calls: int = _f(3, "Calls on identical inputs whose outputs must agree bit for bit.", ge=2)
    guard_bytes: int = _f(65536, "Least gap of checked random background before each buffer a candidate "
                                   "can address (gaps are random in [g, 2g)).", ge=256)
    call_timeout_s: float = _f(10.0, "One candidate call (or one graph replay) running longer is a hang.", gt=0)
    max_verify_s: float = _f(900.0, "The verification of every shape a kernel declares (an M-range's many light checks "
                                     "included) taking longer fails it: each call may take up to call_timeout_s and "
                                     "beats the worker's heartbeat, so nothing else bounds the whole (review 41).", gt=0)
    max_workspace_bytes: int = _f(4 << 30, "Largest workspace a candidate may ask for.", ge=0)
    rejudge_factor: float = _f(1.25, "A verified score above this multiple of the best score known for the shape (stored "
                                     "results, the library's entry) is judged again in a fresh process before it counts.",
                               gt=1.0)
    rejudge_above: float = _f(1.5, "With no score known for the shape, a score above this is judged again.", gt=0)


@dataclass
class TimingConfig:
    modes: list[str] = _f(["offline", "server"], "Timing modes.", each_choices=["offline", "server"])
    baselines: list[str] = _f(["cublas", "cublaslt", "cublaslt_autotune"], "Baselines timed beside the candidate.",
                              each_choices=["cublas", "cublaslt", "cublaslt_autotune"])
    repeats: int = _f(40, "Offline: timed graph replays per runner, interleaved in rounds (speedups are medians of "
                          "per-round ratios).", ge=3)
    min_replay_ms: float = _f(0.25, "Offline: each graph replay holds enough calls, each on its own input set, to last "
                                   "about this long at the vendor's speed (bounded by max_sets).", gt=0)
    snapshot_calls: float = _f(2.0, "Offline: calls per replay, on average, whose output is snapshotted the moment the "
                                    "call ends (each call's snapshot armed independently with probability this / "
                                    "calls, afresh for every replay and runner), so a call whose output a later call "
                                    "of the replay completes is caught.", gt=0)
    rotation_l2_factor: float = _f(2.0, "Input sets rotate until their bytes exceed this multiple of L2.", ge=0)
    max_sets: int = _f(512, "Upper bound on rotating input sets (tiny shapes stop here).", ge=1)
    max_graph_calls: int = _f(4096, "Upper bound on calls captured in one offline graph.", ge=1)
    server_calls: int = _f(60, "Server: individually timed calls per runner, interleaved in rounds.", ge=3)
    server_sets: int = _f(2, "Server: input sets of its own (every call follows an L2 flush, so more sets would not make "
                             "a call colder, only the untimed preparation and checks around it longer); at most the "
                             "offline mode's count.", ge=1)
    server_gap_us: float = _f(100.0, "Server: mean idle gap before each call (exponential), in microseconds.", ge=0)
    flush_l2_factor: float = _f(2.0, "Server: the L2 flush writes this multiple of the L2 size.", ge=2.0)
    autotune_k: int = _f(100, "cuBLASLt autotune: how many heuristic algorithms are timed.", ge=1, le=100)
    floor_slack: float = _f(1.0, "A time below floor x this factor is rejected as impossible.", gt=0, le=1.0)
    profile_metrics: str = _f("default", "Named Nsight Compute metric set for --profile.")


@dataclass
class RunConfig:
    db: str = _f("runs/cudal2.sqlite", "SQLite file where results are persisted as they arrive (resume reads it).")
    job_timeout_s: float = _f(900.0, "Backstop: a worker job silent for this long is killed.", gt=0)
    gpu: int = _f(0, "CUDA device index the worker uses.", ge=0)


@dataclass
class SearchConfig:
    families: list[str] = _f(["sm80", "sm90raw", "skinny", "stream"], "Kernel families the template proposer draws from "
                             "(sm90 is CUTLASS host code, contract v1: measured, never published).",
                             each_choices=["sm80", "sm90", "sm90raw", "skinny", "stream"])
    batch: int = _f(16, "Candidates proposed and evaluated per round (builds run in parallel).", ge=1)
    budget_minutes: float = _f(10.0, "Wall-clock budget per shape, in minutes.", gt=0)
    max_candidates: int = _f(160, "Most candidates evaluated per shape (across resumed runs).", ge=1)
    max_rounds: int = _f(0, "Most proposal rounds per shape (across resumed runs); 0: no limit.", ge=0)
    target_speedup: float = _f(0.0, "Stop a shape early once its best score reaches this (0: never).", ge=0)
    confirm: bool = _f(True, "Before publishing, measure the shape's best afresh, beside the library's entry for "
                             "the shape, and publish only if it still scores higher.")
    explore: float = _f(0.25, "Share of each round drawn fresh from the prior rather than mutated from the best.",
                        ge=0, le=1.0)
    seed: int = _f(0, "Seed of the proposers' random choices.", ge=0)


@dataclass
class LLMConfig:
    backend: str = _f("", "The LLM: 'openai:<model>', 'vllm:<model-or-path>' or 'hf:<model-or-path>'; empty means "
                          "no LLM (the template proposer runs alone).")
    base_url: str = _f("", "openai backend: server URL (e.g. http://127.0.0.1:8000/v1); empty reads OPENAI_BASE_URL.")
    api_key_env: str = _f("OPENAI_API_KEY", "openai backend: environment variable holding the API key.")
    timeout_s: float = _f(600.0, "openai backend: one request's timeout.", gt=0)
    retries: int = _f(2, "openai backend: retries of a failed request.", ge=0)
    samples: int = _f(4, "Completions sampled per prompt.", ge=1)
    temperature: float = _f(0.8, "Sampling temperature.", ge=0)
    max_tokens: int = _f(8192, "Most tokens per completion.", ge=16)
    output_mode: str = _f("full", "'full': the model writes a whole file; 'diff': SEARCH/REPLACE edits against a parent.",
                          choices=["full", "diff"])
    share: float = _f(0.5, "Share of each search round given to the LLM proposer when one is configured.", ge=0, le=1.0)
    retrieval_k: int = _f(6, "Retrieved chunks per prompt.", ge=0)
    retrieval_tokens: int = _f(6000, "Token budget for retrieved context in one prompt.", ge=0)
    embedding_model: str = _f("", "Optional sentence-transformers model for dense retrieval beside BM25.")
    trace: str = _f("runs/trace.jsonl", "JSONL trace of (prompt, completion, parent, verdict, reward parts) for GRPO.")


@dataclass
class LibraryConfig:
    root: str = _f("", "Kernel library folder; empty means the kernels_out/ folder beside the package.")
    serve_margin: float = _f(0.02, "A search winner is published only where the judge measured it faster than the vendor "
                                   "on the caller's operands (cuBLAS TN, cuBLASLt) by at least this in one timing mode and "
                                   "slower in none; "
                                   "an entry is served only where its speedup over the vendor is at least 1 + this in every "
                                   "mode (on the median of its recent product benches against F.linear, each at least 1; "
                                   "before any bench, over vendor_default); elsewhere the vendor runs.", ge=-1.0)


@dataclass
class TrainConfig:
    floor: float = _f(0.0, "Reward of every failure: a parse, policy or build error, any failed check, a detected "
                           "cheat (sanity) or a candidate fault (hang, crash, illegal address).")
    verified: float = _f(0.2, "Reward of a verified kernel at speedup 0 (the gate: only verified kernels earn more "
                              "than the floor; compiling alone earns nothing).", ge=0)
    speedup_cap: float = _f(2.0, "The speedup term is min(speedup, cap) / cap: a verified kernel earns at most "
                                 "verified + (1 - verified) at this speedup over the vendor, and no more.", gt=0)
    ncu_weight: float = _f(0.0, "Weight of the optional Nsight Compute term (tensor-pipe utilization, in [0, 1], capped "
                                "by the verified FLOP rate: rl/reward.verified_pipe); 0 skips profiling.", ge=0, le=1)
    holdout_fraction: float = _f(0.1, "Shapes of the 1000-shape grid held out of training (chosen by a hash of the "
                                      "shape, the same on every machine).", ge=0, le=0.9)
    num_generations: int = _f(4, "Completions per prompt (a GRPO group).", ge=2)
    batch_prompts: int = _f(1, "Prompts per step.", ge=1)
    max_completion_length: int = _f(2048, "Tokens per completion.", ge=8)
    learning_rate: float = _f(1e-5, "AdamW learning rate.", gt=0)
    lora_r: int = _f(0, "LoRA rank (peft); 0 trains every weight (small models only).", ge=0)
    save_steps: int = _f(10, "Checkpoint every this many steps (resume picks up the latest).", ge=1)
    use_vllm: bool = _f(False, "Generate with vLLM (colocated) when it is installed.")
    temperature: float = _f(1.0, "GRPO's sampling temperature for the completions of a group.", gt=0)
    top_k: int = _f(0, "GRPO's top-k sampling (0: off, TRL's default; Hugging Face generate defaults to 50).", ge=0)
    bf16: bool = _f(True, "Train in bf16 mixed precision on GPUs that support it (off: fp32, as the model is "
                          "sampled outside training).")
    sft_family: str = _f("sm80", "Family whose renders warm-start stage matmul (`train --stage sft`): sm80, or tiled "
                                 "(a file about a quarter as long, for a small model).", choices=["sm80", "tiled"])


@dataclass
class Config:
    build: BuildConfig = field(default_factory=BuildConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    timing: TimingConfig = field(default_factory=TimingConfig)
    run: RunConfig = field(default_factory=RunConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    library: LibraryConfig = field(default_factory=LibraryConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    @classmethod
    def load(cls, path: str | os.PathLike | None = None, **overrides: dict[str, Any]) -> "Config":
        """Defaults, then the TOML file (if any), then `overrides` (section -> {key: value})."""
        data: dict[str, Any] = {}
        if path is not None:
            try:
                data = tomllib.loads(Path(path).read_text())
            except FileNotFoundError:
                raise ConfigError(f"config file not found: {path}") from None
            except tomllib.TOMLDecodeError as e:
                raise ConfigError(f"{path}: not valid TOML: {e}") from None
            except (OSError, UnicodeDecodeError) as e:   # a folder, unreadable, not UTF-8 (review 43)
                raise ConfigError(f"cannot read config file {path}: {getattr(e, 'strerror', None) or e}") from None
            except (ValueError, RecursionError) as e:   # an integer past 4300 digits, arrays nested too deep (review 44)
                raise ConfigError(f"{path}: not valid TOML: {type(e).__name__}: {str(e)[:200]}") from None
        for section, values in overrides.items():
            data.setdefault(section, {}).update(values)
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Config":
        sections = {f.name: f.type for f in dataclasses.fields(cls)}
        hints = get_type_hints(cls)
        unknown = set(data) - set(sections)
        if unknown:
            raise ConfigError(f"unknown config section(s): {', '.join(sorted(unknown))}")
        built = {}
        for name in sections:
            built[name] = _build_section(name, hints[name], data.get(name, {}))
        return cls(**built)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def digest(self, *sections: str) -> str:
        """A short hash of the named sections (all when none), for cache and result keys."""
        d = self.to_dict()
        picked = {s: d[s] for s in (sections or d)}
        return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()[:16]


def _build_section(name: str, klass: type, values: Any) -> Any:
    if not isinstance(values, dict):
        raise ConfigError(f"[{name}] must be a table")
    fields = {f.name: f for f in dataclasses.fields(klass)}
    hints = get_type_hints(klass)
    unknown = set(values) - set(fields)
    if unknown:
        raise ConfigError(f"unknown key(s) in [{name}]: {', '.join(sorted(unknown))}")
    checked = {k: _check(f"{name}.{k}", hints[k], v, fields[k].metadata) for k, v in values.items()}
    return klass(**checked)


def _check(key: str, hint: Any, value: Any, meta: dict[str, Any]) -> Any:
    """The value, normalised (an int where a float is expected becomes a float), or ConfigError."""
    origin = getattr(hint, "__origin__", None)
    if origin is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{key} must be a list of strings, got {value!r}")
        allowed = meta.get("each_choices")
        bad = [v for v in value if allowed and v not in allowed]
        if bad:
            raise ConfigError(f"{key}: {bad} not among {allowed}")
        return list(value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
        raise ConfigError(f"{key} must be {hint.__name__}, got {value!r}")
    if hint is float and value != value:   # TOML's nan passed every bound (each comparison false; review 43)
        raise ConfigError(f"{key} must be a number, got nan")
    if "ge" in meta and value < meta["ge"]:
        raise ConfigError(f"{key} must be >= {meta['ge']}, got {value}")
    if "gt" in meta and value <= meta["gt"]:
        raise ConfigError(f"{key} must be > {meta['gt']}, got {value}")
    if "choices" in meta and value not in meta["choices"]:
        raise ConfigError(f"{key} must be one of {meta['choices']}, got {value!r}")
    if "le" in meta and value > meta["le"]:
        raise ConfigError(f"{key} must be <= {meta['le']}, got {value}")
    return value
