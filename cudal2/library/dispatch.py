"""The compiled dispatcher (`csrc/dispatch.cpp`): built once per torch version by
`cudal2 library build`, loaded by the library, fed with its served kernels.

Guarantees:
- `build()` compiles the dispatcher with the host C++ compiler against the installed torch (no
  ninja, no nvcc, no CUDA libraries of torch's: it is host code that finds the driver at run
  time) into the cache folder, keyed by the torch version, its CUDA version and the source's
  hash; it is never run on a call path;
- `load()` imports an already-built dispatcher (registering `torch.ops.cudal2.linear`) or returns
  None, fast: it never compiles; one per process;
- `register(ext, entry_id, module, M, N, K)` resolves a v2 entry's launch spec for its shape
  (which also raises the kernels' shared-memory limits) and hands the function handles and
  launch records to the dispatcher's table.

Does not: decide what is served (the `Library` does), or load binaries (the loader does).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from cudal2.library.manifest import LibraryError

SOURCE = Path(__file__).resolve().parent.parent / "csrc" / "dispatch.cpp"
# Argument kinds, in the order of `enum Kind` in dispatch.cpp.
KINDS = {"A": 0, "B": 1, "C": 2, "ws": 3, "M": 4, "N": 5, "K": 6, "int": 7, "tmap": 8}
_loaded: dict[str, object] = {}


def _tag() -> str:
    import torch
    src = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    return f"torch{torch.__version__}-cuda{torch.version.cuda}-{src}".replace("+", "_")


def _name() -> str:
    return "cudal2_dispatch_" + hashlib.sha256(_tag().encode()).hexdigest()[:10]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cudal2" / "dispatch" / _tag()


def built_path() -> Path:
    return cache_dir() / (_name() + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))


def compile_command(out: Path, syntax_only: bool = False) -> list[str]:
    """The compiler command for the dispatcher (`syntax_only`: check it compiles, write nothing)."""
    import torch
    from torch.utils import cpp_extension as ext
    cuda_home = ext.CUDA_HOME or "/usr/local/cuda"
    incs = ext.include_paths() + [os.path.join(cuda_home, "include"), sysconfig.get_paths()["include"]]
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    cmd = [os.environ.get("CXX", "c++"), "-std=c++17", "-O2", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
           f"-DTORCH_EXTENSION_NAME={_name()}", "-DTORCH_API_INCLUDE_EXTENSION_H", *[f"-I{i}" for i in incs],
           str(SOURCE)]
    if syntax_only:
        return cmd + ["-fsyntax-only"]
    libs = ext.library_paths()
    return cmd + ["-shared", "-o", str(out), *[f"-L{p}" for p in libs], *[f"-Wl,-rpath,{p}" for p in libs],
                  "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python", "-ldl"]


def build() -> Path:
    """Compile the dispatcher for this torch (about a minute); the path of the built module."""
    out = built_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    r = subprocess.run(compile_command(tmp), capture_output=True, text=True)
    if r.returncode != 0:
        raise LibraryError(f"cudal2: building the dispatcher failed: {(r.stderr or r.stdout).strip()[-2000:]}")
    os.replace(tmp, out)  # atomic: a concurrent load sees the old file or the whole new one
    return out


def load():
    """The built dispatcher module, imported once per process; None when it is not built. Once one
    is imported, it is the process's (it owns the `cudal2` op namespace): later calls return it,
    whatever the cache folder says now."""
    if _loaded:
        return next(iter(_loaded.values()))
    path = built_path()
    key = str(path)
    if not path.exists():
        return None
    import torch  # noqa: F401  (its libraries first: the module links them)
    loader = importlib.machinery.ExtensionFileLoader(_name(), key)
    spec = importlib.util.spec_from_file_location(_name(), key, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    sys.modules[_name()] = mod
    _register_fake()
    _loaded[key] = mod
    return mod


def _register_fake() -> None:
    import torch

    @torch.library.register_fake("cudal2::linear")
    def _(x, w, bias=None):
        return x.new_empty((*x.shape[:-1], w.shape[0]))



def register(ext, entry_id: str, module, M: int, N: int, K: int) -> None:
    """Put a loaded v2 module, resolved at (M, N, K), into the dispatcher's table."""
    launches = []
    for r in module.resolved(M, N, K):
        args = []
        for kind, v in r.args:
            if kind == "tmap":
                which, box, swizzle = v
                args.append([KINDS[kind], "ABC".index(which), int(box[0]), int(box[1]), int(swizzle)])
            else:
                args.append([KINDS[kind], int(v or 0) if kind in ("int", "ws") else 0, 0, 0, 0])
        launches.append((module.handle(r.name), list(r.grid), list(r.block), list(r.cluster), int(r.smem), args))
    ext.add_kernel(entry_id, M, N, K, module.workspace_bytes(M, N, K), launches, module.device)
