"""Isolation: a job that hangs, segfaults or raises costs itself only; the worker comes back."""

import time

import pytest

from cudal2.harness.worker import Worker
from cudal2.result import Fault


@pytest.fixture
def worker():
    w = Worker(job_timeout_s=30)
    yield w
    w.close()


def test_job_result_comes_back(worker):
    o = worker.run("tests.worker_jobs:echo", {"x": 1})
    assert o.ok and o.value == {"x": 1}


def test_hang_is_killed_within_its_heartbeat_deadline(worker):
    t0 = time.monotonic()
    o = worker.run("tests.worker_jobs:hang", "gaussian", 1.0)
    assert o.fault is Fault.HANG and o.stage == "gaussian"
    assert time.monotonic() - t0 < 10


def test_segfault_is_a_crash_and_the_next_job_runs(worker):
    o = worker.run("tests.worker_jobs:segfault")
    assert o.fault is Fault.CRASH and "SIGSEGV" in o.error
    assert worker.run("tests.worker_jobs:echo", 2).value == 2


def test_exception_is_an_answer_not_a_crash(worker):
    pid = worker.run("tests.worker_jobs:pid").value
    o = worker.run("tests.worker_jobs:raises")
    assert not o.ok and o.fault is None and "a bug in a job" in o.error
    assert worker.run("tests.worker_jobs:pid").value == pid


def test_requested_exit_replaces_the_process(worker):
    pid = worker.run("tests.worker_jobs:pid").value
    assert worker.run("tests.worker_jobs:abort_after_exit_request").value == "answered"
    assert worker.run("tests.worker_jobs:pid").value != pid
