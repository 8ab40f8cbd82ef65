"""Where the episodes of a ``dgym run`` execute: threads here, or Ray tasks on a cluster.

An executor takes the task names still to run and fills a ``results`` dict
``{task name: TaskStatus}`` as episodes end, telling a :class:`Listener`
(the progress bar) when an episode starts and ends. Ctrl-C
(``KeyboardInterrupt``) stops it cleanly: running episodes end with reason
``"interrupted"``, queued ones never start, and the ``KeyboardInterrupt`` is
raised again once every episode has returned (``results`` then holds the
statuses of the episodes that ran).

- :class:`LocalExecutor`: ``workers`` threads on this machine (``dgym run -n``).
- :class:`dgym_tui.runs.executors.ray.RayExecutor`: one Ray task per episode
  (``dgym run --executor ray``); imported only when chosen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, Protocol

from dgym_tui.runs.config import ConfigError
from dgym_tui.runs.executors.stop import StopSignal

if TYPE_CHECKING:
    from dgym_tui.runs.runner import RunJob, TaskStatus

class Listener(Protocol):
    """What an executor reports while it runs (the progress bar implements it)."""

    def started(self, name: str) -> None:
        """The episode of task ``name`` has started."""

    def finished(self, status: TaskStatus) -> None:
        """The episode of ``status.task`` has ended (any state)."""


class LocalExecutor:
    """Runs episodes in ``workers`` threads of this process, each with its own environment."""

    name = "local"

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(1, int(workers))

    def run(self, job: RunJob, names: list[str], results: dict[str, TaskStatus],
            listener: Listener) -> None:
        """Run the episodes of ``names``; store each status in ``results`` as it ends.

        Raises:
            KeyboardInterrupt: Ctrl-C; running episodes were ended with reason
                ``"interrupted"`` and have returned, queued ones never started.
        """
        interrupt = StopSignal()
        lock = threading.Lock()
        active: set[str] = set()  # episodes started and not yet returned

        def one(name: str) -> None:
            with lock:  # atomic with respect to the stop: either not started, or waited for
                if interrupt.event.is_set():
                    return  # queued when Ctrl-C came: never started
                active.add(name)
            try:
                listener.started(name)
                status = job.run_episode(name, interrupt)
                results[name] = status
                listener.finished(status)
            finally:
                with lock:
                    active.discard(name)

        if self.workers <= 1 or len(names) <= 1:
            for name in names:
                try:
                    one(name)
                except KeyboardInterrupt:
                    results[name] = job.stopped_status(name)
                    raise
            return
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="dgym-task")
        futures = []
        try:
            for name in names:
                futures.append(pool.submit(one, name))
            _wait_interruptibly(futures)
        except KeyboardInterrupt:  # may come anywhere above, even between two submits
            pool.shutdown(wait=False, cancel_futures=True)
            _stop_until_returned(interrupt, lambda: bool(active), lock)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        for future in futures:
            future.result()  # an unexpected error of the executor itself (run_task catches all)


#: Longest wait (s) of the main thread between two looks at a pending Ctrl-C.
POLL = 0.25


def _wait_interruptibly(futures: list[Future], poll: float = POLL) -> None:
    """Wait until every future is done, ready for Ctrl-C at most ``poll`` seconds later.

    The kernel may deliver SIGINT or SIGTERM to any thread of the process. When a
    worker thread gets it, CPython only flags it for the main thread, and a main
    thread blocked in a lock wait without a timeout (``shutdown(wait=True)``,
    ``Thread.join()``) would not run the handler until every episode has ended
    on its own: minutes for a slow eval. A wait with a timeout returns to the
    interpreter, which runs the handler and raises ``KeyboardInterrupt`` here.
    """
    pending = set(futures)
    while pending:
        _, pending = wait(pending, timeout=poll)


def _stop_until_returned(interrupt: StopSignal, busy: Callable[[], bool], lock: threading.Lock,
                         sweep: float = 0.5) -> None:
    """Stop every episode and wait until none is running (``busy()`` false, read under ``lock``).

    The stop is repeated every ``sweep`` seconds: an episode that was still
    building its environment when Ctrl-C came starts its terminal (and its
    initial eval) only afterwards, and must be stopped too.
    """
    while True:
        interrupt.trigger()
        with lock:
            if not busy():
                return
        time.sleep(sweep)


def ray_executor(address: str | None = None, shared_output: bool = False) -> Any:
    """Build the :class:`~dgym_tui.runs.executors.ray.RayExecutor` (``dgym run --executor ray``).

    Args:
        address: Ray cluster address (``"auto"``, ``"HOST:PORT"``, ``"ray://..."``);
            None starts a local Ray instance.
        shared_output: the output folder is at the same path on every node;
            episodes write there directly instead of streaming to the driver.

    Raises:
        ConfigError: Ray is not installed (``pip install 'dgym-tui[ray]'``; one line).
    """
    try:
        from dgym_tui.runs.executors.ray import RayExecutor
    except ImportError as exc:
        raise ConfigError(f"--executor ray needs Ray: pip install 'dgym-tui[ray]' ({exc})") \
            from None
    return RayExecutor(address=address, shared_output=shared_output)
