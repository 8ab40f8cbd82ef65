"""RayExecutor: each episode of a ``dgym run`` is a Ray task (``dgym run --executor ray``).

Resources, streaming, a shared output folder, node failure and Ctrl-C: docs/headless.md.

The module imports ``ray``: load it only through
:func:`dgym_tui.runs.executors.local.ray_executor`.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayError, RayTaskError, TaskCancelledError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from dgym_tui.core import tempdirs
from dgym_tui.runs.executors.stop import StopSignal

#: Seconds between two shipments of an episode's new trajectory lines.
SHIP_EVERY = 0.2
#: Seconds the executor waits for running episodes after Ctrl-C.
STOP_WAIT = 60.0
#: The file shipped line by line as it grows; every other file is shipped at the end.
STREAMED = "trajectory.jsonl"


@ray.remote(num_cpus=0, max_restarts=0)
class _Sink:
    """Writes what the episodes ship into the run's output folder (runs on the driver's node)."""

    def __init__(self, output_dir: str, shared: bool) -> None:
        self.root = Path(output_dir)
        self.shared = shared  # episodes write into root themselves: touch no file
        self.attempt: dict[str, int] = {}  # task -> attempt whose lines are accepted
        self.folder: dict[str, str] = {}  # task -> its folder name
        self.fresh: list[str] = []  # tasks whose episode started since the last take_started
        self.stopped = False

    def begin(self, task: str, attempt: int) -> None:
        """Accept only ``attempt`` of ``task`` from now on; drop what an earlier attempt wrote."""
        self.attempt[task] = attempt
        if task in self.folder and not self.shared:  # shared: the new attempt empties it
            shutil.rmtree(self.root / self.folder.pop(task), ignore_errors=True)
        self.folder.pop(task, None)

    def ship(self, task: str, attempt: int, folder: str, appends: dict[str, bytes],
             files: dict[str, bytes]) -> bool:
        """Append ``appends`` and (re)write ``files`` in ``folder``; return True when the
        run is stopping. Shipments of an attempt other than the current one are ignored."""
        if self.attempt.get(task) != attempt:
            return True  # a lost attempt that still runs somewhere: stop it
        target = self.root / folder
        if task not in self.folder:  # first shipment of this attempt: start from scratch
            if not self.shared:
                shutil.rmtree(target, ignore_errors=True)
                target.mkdir(parents=True, exist_ok=True)
            self.folder[task] = folder
            self.fresh.append(task)
        for name, data in appends.items():
            with open(target / name, "ab") as f:
                f.write(data)
        for name, data in files.items():
            tmp = target / f".{name}.part"
            tmp.write_bytes(data)
            tmp.replace(target / name)
        return self.stopped

    def take_started(self) -> list[str]:
        """Tasks whose episode shipped for the first time since the last call."""
        fresh, self.fresh = self.fresh, []
        return fresh

    def stop(self) -> None:
        """Ask every episode to stop (answered on its next shipment)."""
        self.stopped = True


class _Shipper(threading.Thread):
    """Ships an episode's folder (under ``root``) to the sink while the episode runs;
    with ``shared`` (the episode writes into the run's folder itself) it only pings."""

    def __init__(self, sink: Any, task: str, attempt: int, root: Path, stop: StopSignal,
                 shared: bool = False) -> None:
        super().__init__(name=f"dgym-ship-{task}", daemon=True)
        self.sink, self.task, self.attempt, self.root, self.stop = sink, task, attempt, root, stop
        self.shared = shared
        self.offset = 0
        self.finished = threading.Event()

    def run(self) -> None:
        while not self.finished.wait(SHIP_EVERY):
            self._ship(final=False)

    def close(self) -> None:
        """Stop the thread and ship everything that is left."""
        self.finished.set()
        self.join()
        self._ship(final=True)

    def _ship(self, final: bool) -> None:
        if self.shared:
            self._send("", {}, {})  # a ping: the sink of a shared run touches no folder
            return
        folders = [p for p in self.root.iterdir() if p.is_dir()]
        if not folders:
            return
        folder = folders[0]
        appends, files = {}, {}
        try:
            with open(folder / STREAMED, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            data = b""
        if not final:
            data = data[:data.rfind(b"\n") + 1]  # complete lines only
        if data:
            appends[STREAMED] = data
            self.offset += len(data)
        if final:
            files = {p.name: p.read_bytes() for p in folder.iterdir()
                     if p.is_file() and p.name != STREAMED}
        self._send(folder.name, appends, files)

    def _send(self, folder: str, appends: dict[str, bytes], files: dict[str, bytes]) -> None:
        if ray.get(self.sink.ship.remote(self.task, self.attempt, folder, appends, files)):
            self.stop.trigger()


#: Benchmarks a worker process loaded, by their config: loaded once, not per episode.
_loaded: dict[str, Any] = {}


def _episode(job: Any, task: str, attempt: int, sink: Any, shared: bool) -> Any:
    """Ray task body: run one episode into a temporary folder, shipping it to ``sink``
    (with ``shared``: into the run's output folder itself).

    Returns:
        The episode's ``TaskStatus``.
    """
    key = repr(job.config.to_dict().get("benchmark"))
    if key in _loaded:
        job = dataclasses.replace(job, benchmark=_loaded[key])
    stop = StopSignal()
    root = Path(job.output_dir) if shared else Path(tempdirs.make("ray"))
    shipper = _Shipper(sink, task, attempt, root, stop, shared)
    shipper.start()
    info: dict[str, Any] = {"node": ray.get_runtime_context().get_node_id()}
    if attempt > 1:
        info["retried"] = True
    try:
        status = job.run_episode(task, stop, output_dir=root, task_info=info)
        if job.benchmark is not None:
            _loaded[key] = job.benchmark
        return status
    except KeyboardInterrupt:  # stopped before its episode began (the run is ending)
        return dataclasses.replace(job, output_dir=root).stopped_status(task)
    finally:
        shipper.close()
        if not shared:
            shutil.rmtree(root, ignore_errors=True)


_remote_episode = ray.remote(max_retries=0)(_episode)


class RayExecutor:
    """Runs each episode as a Ray task on a cluster (see the module docstring).

    Args:
        address: cluster address (``"auto"``, ``"HOST:PORT"``, ``"ray://..."``);
            None connects to ``RAY_ADDRESS`` if set, else starts a local Ray.
        shared_output: the run's output folder is at the same path on every
            node: episodes write there directly instead of streaming to the driver.
    """

    name = "ray"

    def __init__(self, address: str | None = None, shared_output: bool = False) -> None:
        self.address = address
        self.shared_output = shared_output

    def _connect(self) -> None:
        if not ray.is_initialized():
            ray.init(address=self.address or os.environ.get("RAY_ADDRESS") or None,
                     include_dashboard=False, logging_level="WARNING",
                     configure_logging=False)

    @staticmethod
    def _needs_docker(job: Any, task: str) -> bool:
        if job.config.terminal == "docker":
            return True
        try:
            return getattr(job.benchmark.load(task), "terminal", None) == "docker"
        except Exception:  # noqa: BLE001  the episode reports a task that cannot load
            return False

    def run(self, job: Any, names: list[str], results: dict[str, Any],
            listener: Any = None) -> None:
        """Run the episodes of ``names`` on the cluster; fill ``results`` as they end.

        Raises:
            KeyboardInterrupt: Ctrl-C, after the running episodes ended (or
                ``STOP_WAIT`` passed).
        """
        self._connect()
        here = ray.get_runtime_context().get_node_id()
        sink = _Sink.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
            here, soft=False)).remote(str(job.output_dir), self.shared_output)
        shipped_job = ray.put(dataclasses.replace(job, benchmark=None))
        pending: dict[Any, tuple[str, int]] = {}
        started: set[str] = set()

        def submit(task: str, attempt: int) -> None:
            ray.get(sink.begin.remote(task, attempt))
            resources = {"docker": 1} if self._needs_docker(job, task) else {}
            ref = _remote_episode.options(num_cpus=1, resources=resources).remote(
                shipped_job, task, attempt, sink, self.shared_output)
            pending[ref] = (task, attempt)

        def collect(timeout: float) -> None:
            # returns as soon as one episode ends (the progress bar and the
            # resubmission of a lost episode see it at once), else after ``timeout``
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=timeout)
            for task in ray.get(sink.take_started.remote()):
                started.add(task)
                if listener is not None:
                    listener.started(task)
            for ref in ready:
                task, attempt = pending.pop(ref)
                try:
                    status = ray.get(ref)
                except TaskCancelledError:
                    continue
                except RayTaskError as exc:  # the episode code itself failed
                    status = job.failed_status(task, f"{type(exc).__name__}: {exc}")
                except RayError as exc:  # its node or worker died
                    if attempt == 1 and not stopping:
                        submit(task, 2)
                        continue
                    status = job.failed_status(task, f"episode lost twice: {exc}")
                results[task] = status
                if listener is not None:
                    listener.finished(status)

        stopping = False
        try:
            for task in names:
                submit(task, 1)
            while pending:
                collect(0.5)
        except KeyboardInterrupt:
            stopping = True
            ray.get(sink.stop.remote())
            for ref, (task, _) in pending.items():
                if task not in started:
                    ray.cancel(ref)  # queued: never starts
            deadline = time.monotonic() + STOP_WAIT
            while pending and time.monotonic() < deadline:
                collect(0.5)
            for ref, (task, _) in pending.items():
                ray.cancel(ref, force=True)
                results.setdefault(task, job.stopped_status(task))
            raise
        finally:
            ray.kill(sink)
