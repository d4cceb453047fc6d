"""The decode pool runs every job exactly once, with the calling thread working beside
``concurrency - 1`` pool threads, and raises a job's error only after the rest have run."""

from __future__ import annotations

import threading
import time

import pytest

from robodata.reader._decode_pool import run_jobs


def _recording(count: int, seconds: float = 0.0):
    ran: list[tuple[int, int]] = []  # (job, thread ident)
    lock = threading.Lock()

    def job(k: int):
        def run() -> None:
            time.sleep(seconds)  # releases the GIL, as decoding does
            with lock:
                ran.append((k, threading.get_ident()))

        return run

    return ran, [job(k) for k in range(count)]


def test_every_job_runs_once_and_the_caller_runs_some():
    ran, jobs = _recording(12, seconds=0.01)
    run_jobs(jobs, concurrency=2)
    assert sorted(k for k, _ in ran) == list(range(12))
    threads = {thread for _, thread in ran}
    assert threading.get_ident() in threads and len(threads) == 2


def test_one_worker_runs_everything_in_order_on_the_caller():
    ran, jobs = _recording(5)
    run_jobs(jobs, concurrency=1)
    assert ran == [(k, threading.get_ident()) for k in range(5)]


def test_a_single_job_runs_on_the_caller():
    ran, jobs = _recording(1)
    run_jobs(jobs, concurrency=4)
    assert ran == [(0, threading.get_ident())]


@pytest.mark.parametrize("failing", [0, 5])
def test_an_error_is_raised_after_the_other_jobs_ran(failing):
    ran, jobs = _recording(8, seconds=0.005)

    def broken() -> None:
        raise ValueError(f"job {failing} failed")

    jobs[failing] = broken
    with pytest.raises(ValueError, match=f"job {failing} failed"):
        run_jobs(jobs, concurrency=2)
    assert sorted(k for k, _ in ran) == [k for k in range(8) if k != failing]


def test_robodata_decode_threads_sets_the_threads_of_a_read_that_names_none(monkeypatch):
    monkeypatch.setenv("ROBODATA_DECODE_THREADS", "1")
    ran, jobs = _recording(6, seconds=0.01)
    run_jobs(jobs)
    assert ran == [(k, threading.get_ident()) for k in range(6)]  # all on the caller, in order
    monkeypatch.setenv("ROBODATA_DECODE_THREADS", "2")
    ran, jobs = _recording(12, seconds=0.01)
    run_jobs(jobs)
    assert len({thread for _, thread in ran}) == 2


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_robodata_decode_threads_is_named(monkeypatch, value):
    monkeypatch.setenv("ROBODATA_DECODE_THREADS", value)
    with pytest.raises(ValueError, match=rf"^\$ROBODATA_DECODE_THREADS must be a whole number .*; got '{value}'$"):
        run_jobs([lambda: None, lambda: None])
