"""Jobs for the worker-isolation tests: each misbehaves the way a candidate can."""

import ctypes
import os
import time

from cudal2.harness.worker import beat, request_exit


def echo(x):
    return x


def pid():
    return os.getpid()


def hang(stage="exact", beat_s=1.0):
    beat(stage, beat_s)
    while True:
        time.sleep(0.05)


def segfault():
    beat("exact", 30)
    ctypes.string_at(0)


def abort_after_exit_request():
    request_exit()
    return "answered"


def raises():
    raise ValueError("a bug in a job")
