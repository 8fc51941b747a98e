"""Killable worker processes: the only place candidate code is ever loaded or run.

Guarantees:
- a `Worker` owns one long-lived child process (spawned, never forked, so no CUDA state is
  inherited) bound to one GPU; jobs are named functions ("module:function") run in the child;
- a fault costs one job, never the caller: if the child dies (segfault, abort, os._exit) the job
  comes back as `Fault.CRASH`; if it goes silent past its deadline it is killed (SIGKILL) and the
  job comes back as `Fault.HANG`; either way the next job gets a fresh child;
- deadlines follow heartbeats: a job calls `beat(stage, seconds)` before each risky step, which
  names the stage (reported with a fault) and sets how long the parent waits for the next word,
  so a hung kernel is caught in seconds while a long autotune is not killed;
- a job can ask for its child to be replaced after it answers (`request_exit`), which the judge
  does after any sticky CUDA error or hang.

Does not: sandbox the child (it runs as the same user, with the same files and network); the
threat is reward hacking by generated code, which the policy and the judge address, not a
deliberate escape.
"""

from __future__ import annotations

import ctypes
import importlib
import multiprocessing as mp
import os
import signal
import time
import traceback
from dataclasses import dataclass
from typing import Any

from cudal2.result import Fault

_conn = None
_gpu = 0
_exit_requested = False


def beat(stage: str, seconds: float) -> None:
    """From inside a job: 'now in `stage`; expect my next word within `seconds`'."""
    if _conn is not None:
        _conn.send(("beat", stage, float(seconds)))


def request_exit() -> None:
    """From inside a job: replace this process once the answer is sent."""
    global _exit_requested
    _exit_requested = True


def gpu_index() -> int:
    return _gpu


def _resolve(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _child(conn, gpu: int) -> None:
    global _conn, _gpu
    _conn, _gpu = conn, gpu
    # Ctrl-C is the parent's to handle: it stops the run (results so far are stored) and closes us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # candidates call the driver API for tensor maps; make its symbols global before they load
        ctypes.CDLL("libcuda.so.1", mode=os.RTLD_GLOBAL)
    except OSError:
        pass
    try:
        import cupy
        cupy.cuda.Device(gpu).use()
        # Before any buffer a candidate will see: a random number of pages, so that an operand's
        # address is no constant distance from the parameter bank (buffers.pad_address_space).
        from cudal2.harness.buffers import pad_address_space
        pad_address_space()
    except Exception:
        pass  # jobs that need the GPU will report why
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        target, args, kwargs = msg
        try:
            reply = ("ok", _resolve(target)(*args, **kwargs), "")
        except BaseException as e:  # a job's exception is an answer, not a crash
            reply = ("error", f"{type(e).__name__}: {e}", traceback.format_exc(limit=8))
        conn.send(reply + (_exit_requested,))
        if _exit_requested:
            conn.close()
            os._exit(0)


@dataclass
class Outcome:
    ok: bool
    value: Any = None
    fault: Fault | None = None
    stage: str = ""       # the last stage the job announced
    error: str = ""


class Worker:
    def __init__(self, gpu: int = 0, job_timeout_s: float = 900.0):
        self.gpu, self.job_timeout_s = gpu, job_timeout_s
        self._ctx = mp.get_context("spawn")
        self._proc = None
        self._conn = None
        self.restarts = 0

    def _spawn(self) -> None:
        self._stop()
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_child, args=(child, self.gpu), daemon=True, name="cudal2-worker")
        self._proc.start()
        child.close()
        self._conn = parent

    def _stop(self, kill: bool = False) -> None:
        if self._proc is None:
            return
        if kill and self._proc.is_alive():
            self._proc.kill()
        self._proc.join(timeout=10)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
        self._conn.close()
        self._proc, self._conn = None, None

    def run(self, target: str, *args: Any, **kwargs: Any) -> Outcome:
        """Run `target(*args, **kwargs)` in the child; never raises for what the job does."""
        if self._proc is None or not self._proc.is_alive():
            self._spawn()
        try:
            self._conn.send((target, args, kwargs))
        except (BrokenPipeError, OSError):
            return self._lost(Fault.CRASH, "", "the worker died before the job started")
        stage, deadline = "", time.monotonic() + self.job_timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return self._lost(Fault.HANG, stage, f"no answer within its deadline in stage {stage or 'start'}; killed")
            try:
                ready = self._conn.poll(min(left, 0.5))
            except (EOFError, OSError):
                ready = True
            if not ready:
                if not self._proc.is_alive():
                    return self._lost(Fault.CRASH, stage, self._death())
                continue
            try:
                msg = self._conn.recv()
            except (EOFError, OSError):
                return self._lost(Fault.CRASH, stage, self._death())
            if msg[0] == "beat":
                stage, deadline = msg[1], time.monotonic() + msg[2]
                continue
            if msg[-1]:  # the child is leaving after this answer: end it before the next job. It is
                # killed, not joined: after a hang its context's teardown waits on the spinning kernel
                self._stop(kill=True)
                self.restarts += 1
            if msg[0] == "ok":
                return Outcome(True, msg[1], stage=stage)
            return Outcome(False, None, stage=stage, error=msg[1] + "\n" + msg[2])

    def _death(self) -> str:
        self._proc.join(timeout=5)
        code = self._proc.exitcode
        if code is not None and code < 0:
            return f"the worker died from signal {signal.Signals(-code).name}"
        return f"the worker exited with code {code}"

    def _lost(self, fault: Fault, stage: str, why: str) -> Outcome:
        self._stop(kill=True)
        self.restarts += 1
        return Outcome(False, None, fault=fault, stage=stage, error=why)

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
            except OSError:
                pass
        self._stop()

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
