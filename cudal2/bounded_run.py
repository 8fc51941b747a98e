"""Running a tool on what a candidate wrote (the compiler, nvdisasm): bounded in time and in output.

Guarantees: `run` starts the command in a session of its own with stdin /dev/null, keeps at most
`max_bytes` of its output (stdout and stderr together), and kills its whole process group when it
prints more or runs past `timeout`; the caller learns which (`Ran.over`, `Ran.rc is None`). The
output is read as it comes, so a tool printing gigabytes costs this process `max_bytes`, not
gigabytes (the compiler printed 1.6 GB of remarks, review 45; nvdisasm prints a function's name on
every call to it, so a long name called often made a listing of any size, review 47).

Does not: bound the tool's memory or its files (the build does, with ulimit), or decode the bytes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Ran:
    rc: int | None     # None: killed at the timeout
    out: bytes         # stdout (with stderr when merged), at most max_bytes
    err: bytes         # stderr when not merged
    over: bool         # it printed more than max_bytes and was killed


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run(cmd: list[str], *, timeout: float, max_bytes: int, cwd: str | None = None, env: dict | None = None,
        merge_stderr: bool = False) -> Ran:
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE, start_new_session=True)
    kept: dict[int, list[bytes]] = {1: [], 2: []}
    size = [0]
    lock, over = threading.Lock(), threading.Event()

    def pump(stream, which: int) -> None:   # up to the limit; past it the group is killed, the rest dropped
        fd = stream.fileno()
        while chunk := os.read(fd, 1 << 16):
            with lock:
                if over.is_set():
                    continue
                size[0] += len(chunk)
                if size[0] > max_bytes:
                    over.set()
                    kill_group(proc)
                else:
                    kept[which].append(chunk)

    readers = [threading.Thread(target=pump, args=(proc.stdout, 1), daemon=True)]
    if not merge_stderr:
        readers.append(threading.Thread(target=pump, args=(proc.stderr, 2), daemon=True))
    for r in readers:
        r.start()
    try:
        rc: int | None = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.wait()
        rc = None
    for r, stream in zip(readers, (proc.stdout, proc.stderr)):
        r.join(timeout=10)    # the group is gone: the pipe's last writer with it
        if not r.is_alive():  # (else a writer outside the group holds it: the reader keeps its fd)
            stream.close()
    return Ran(rc, b"".join(kept[1]), b"".join(kept[2]), over.is_set())
