"""worker_pool and stop_pool: the processes that train models side by side see the parent's
environment and working directory as they are when a job is submitted (a forked worker would
otherwise have the fork server's, from when it started), and a stopped pool does not wait for
its jobs."""

from __future__ import annotations

import multiprocessing
import os
import time

from bitextforge.api import stop_pool, worker_pool


def test_jobs_see_the_environment_and_folder_of_their_submission(tmp_path, monkeypatch):
    with worker_pool(1, ("json",)) as pool:
        assert pool.submit(os.getenv, "BITEXTFORGE_POOL_TEST").result() is None
        # the server and its worker exist now; what changes after must still reach the jobs
        monkeypatch.setenv("BITEXTFORGE_POOL_TEST", "set later")
        monkeypatch.chdir(tmp_path)
        assert pool.submit(os.getenv, "BITEXTFORGE_POOL_TEST").result() == "set later"
        assert pool.submit(os.getcwd).result() == str(tmp_path)
        assert pool.submit(os.getpid).result() != os.getpid()


def test_a_stopped_pool_does_not_wait_for_its_jobs():
    pool = worker_pool(2)
    jobs = [pool.submit(time.sleep, 60) for _ in range(2)]
    time.sleep(0.5)  # both running
    t0 = time.monotonic()
    stop_pool(pool)
    assert time.monotonic() - t0 < 10
    assert all(j.done() for j in jobs) and not multiprocessing.active_children()
