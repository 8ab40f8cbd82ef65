"""dgym run --executor ray on a multi-node Ray cluster on this machine.

The cluster lives in a network namespace of its own (only ``lo``, so every
node is 127.0.0.1 and no test traffic leaves loopback): the outer test
re-runs this file under ``unshare -n`` (root; CI runs as root), where the
inner tests share one cluster (a head without CPUs for the driver's actor,
a worker node with the ``docker`` resource and one without) started and
stopped by the module fixture.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.runs.config import load_config
from dgym_tui.runs.runner import read_status, run_tasks

ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parent.parent
IN_NAMESPACE = os.environ.get("DGYM_RAY_NETNS") == "1"
inner = pytest.mark.skipif(not IN_NAMESPACE, reason="runs inside the network namespace of "
                                                    "test_ray_in_its_own_network_namespace")


@pytest.mark.timeout(900)
def test_ray_in_its_own_network_namespace():
    if IN_NAMESPACE:
        pytest.skip("this is the inner run")
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        pytest.skip("needs root, unshare and ip for a network namespace (CI runs as root)")
    env = dict(os.environ, DGYM_RAY_NETNS="1", RAY_USAGE_STATS_ENABLED="0",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                          if p))
    script = 'ip link set lo up && exec "$0" -m pytest -q -x -p no:cacheprovider "$1"'
    proc = subprocess.run(["unshare", "-n", "sh", "-c", script, sys.executable, __file__],
                          env=env, capture_output=True, text=True, timeout=850, cwd=ROOT)
    print(proc.stdout[-3000:])
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    # the inner tests ran, none skipped (off CI, the Docker one skips without a daemon)
    assert re.search(r"\b7 passed\b", proc.stdout) or (
        os.environ.get("CI") != "true" and "6 passed, 2 skipped" in proc.stdout), proc.stdout


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    interfaces = [name for _, name in socket.if_nameindex()]
    assert interfaces == ["lo"], f"not in a namespace of its own: {interfaces}"
    local = {"node_ip_address": "127.0.0.1"}
    head = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, **local,
        # a killed node is declared dead within ~2 s instead of ~30 s
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 3}})
    nodes = [head.add_node(num_cpus=1, resources={"docker": 1}, **local),
             head.add_node(num_cpus=1, **local)]
    ray.init(address=head.address, logging_level="WARNING")
    head.wait_for_nodes()
    yield head, nodes
    ray.shutdown()
    head.shutdown()


def _slow_tasks(root: Path, names=("a", "b", "c"), seconds: int = 8) -> Path:
    """Mini-style tasks whose tests sleep ``seconds`` once the reference fix (x = 2) is in."""
    for name in names:
        task = root / name
        task.mkdir(parents=True)
        (task / "x.py").write_text("x = 1\n")
        (task / "test_x.py").write_text(
            f"import time\nimport x\n\n\ndef test_x():\n    time.sleep({seconds} if x.x == 2 "
            "else 0)\n    assert x.x == 2\n")
        (task / ".fix.patch").write_text("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
        (task / "task.yaml").write_text("description: slow\nentrypoint: python -m pytest -q "
                                        "test_x.py\nfix: .fix.patch\n")
    return root


def _slow_config(tmp_path: Path, names=("a", "b", "c")):
    tasks = _slow_tasks(tmp_path / "tasks", names)
    return load_config(None, [f"benchmark={{name: mini, path: {tasks}}}", "policy=solution",
                              "terminal=local", "max_steps=5"])


def _run(config, out: Path, executor=None, workers: int = 1, buf: io.StringIO | None = None):
    return run_tasks(config, workers=workers, output_dir=out, executor=executor,
                     console=Console(file=buf or io.StringIO(), width=200), progress=False)


def _wait_for_steps(paths: list[Path], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(p.is_file() and '"type": "step"' in p.read_text() for p in paths):
            return
        time.sleep(0.1)
    raise AssertionError(f"no step recorded in time: {paths}")


def _outcome(summary) -> list[tuple]:
    return [(s.task, s.state, s.resolved, s.score, s.max_score, s.steps, s.reason)
            for s in summary.statuses]


@inner
def test_mini_with_the_solution_policy_matches_a_local_run(cluster, tmp_path):
    from dgym_tui.runs.executors.ray import RayExecutor

    config = load_config("mini_solution", ["tasks=[pagination, org_chart]", "terminal=local"])
    head, nodes = cluster
    local = _run(config, tmp_path / "local")
    remote = _run(config, tmp_path / "ray", RayExecutor())
    assert _outcome(remote) == _outcome(local)
    assert all(s.resolved for s in remote.statuses)
    ran_on = set()
    for name in ("pagination", "org_chart"):
        ran_on.add(read_trajectory(tmp_path / "ray" / name / "trajectory.jsonl")
                   .header["task"]["node"])
        ray_traj = read_trajectory(tmp_path / "ray" / name / "trajectory.jsonl")
        local_traj = read_trajectory(tmp_path / "local" / name / "trajectory.jsonl")
        assert ray_traj.finished and not ray_traj.truncated
        assert [(s["action"]["name"], s["action"]["arguments"]) for s in ray_traj.steps] == \
            [(s["action"]["name"], s["action"]["arguments"]) for s in local_traj.steps]
        assert (tmp_path / "ray" / name / "patch.diff").read_text() == \
            (tmp_path / "local" / name / "patch.diff").read_text()
        assert "retried" not in ray_traj.header["task"]
    assert ran_on <= {node.node_id for node in nodes}  # the worker nodes, not the head


def _holders(path: Path) -> set[int]:
    """Pids of the processes that hold ``path`` open (from /proc/PID/fd)."""
    pids = set()
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(fd) == str(path):
                pids.add(int(fd.parts[2]))
        except OSError:
            continue
    return pids


@inner
def test_with_a_shared_output_path_workers_write_the_folder_themselves(cluster, tmp_path):
    """--shared-output: while the episodes run, their trajectory files in the run's folder
    are held open by the Ray workers (streaming would write them from the driver's actor)."""
    from dgym_tui.runs.executors.ray import RayExecutor

    head, nodes = cluster
    config = _slow_config(tmp_path, names=("a", "b"))
    out = tmp_path / "out"
    result = {}
    runner = threading.Thread(target=lambda: result.setdefault(
        "summary", _run(config, out, RayExecutor(shared_output=True))), daemon=True)
    runner.start()
    paths = [out / name / "trajectory.jsonl" for name in ("a", "b")]
    _wait_for_steps(paths)
    writers = [_holders(path) for path in paths]  # in the slow final eval: the files are open
    runner.join(timeout=240)
    assert "summary" in result, "the run did not end"
    assert all(w and os.getpid() not in w for w in writers), writers
    assert [(s.task, s.state, s.resolved, s.steps) for s in result["summary"].statuses] == \
        [("a", "done", True, 2), ("b", "done", True, 2)]
    headers = [read_trajectory(path).header["task"] for path in paths]
    assert {h["node"] for h in headers} == {node.node_id for node in nodes}  # 1 CPU each
    assert not any(h.get("retried") for h in headers)


@inner
def test_docker_episodes_land_only_on_the_node_with_the_docker_resource(cluster, tmp_path,
                                                                        docker_ready):
    """Two Docker episodes, two free worker nodes of 1 CPU: both run (one after the other)
    on the node started with the ``docker`` resource, none on the other."""
    from dgym_tui.runs.executors.ray import RayExecutor

    head, nodes = cluster
    config = load_config("mini_solution", ["tasks=[pagination, org_chart]", "terminal=docker",
                                           f"image={docker_ready}"])
    summary = _run(config, tmp_path / "out", RayExecutor())
    assert [(s.task, s.state, s.resolved) for s in summary.statuses] == \
        [("pagination", "done", True), ("org_chart", "done", True)]
    for name in ("pagination", "org_chart"):
        header = read_trajectory(tmp_path / "out" / name / "trajectory.jsonl").header
        assert header["task"]["node"] == nodes[0].node_id  # the node with {"docker": 1}


@inner
def test_steps_stream_into_the_driver_folder_and_ctrl_c_resumes(cluster, tmp_path):
    """Ctrl-C while two slow episodes run: both end interrupted (their lines already in the
    driver's folder), the queued one never starts; the next run finishes all three."""
    import _thread

    from dgym_tui.runs.executors.ray import RayExecutor

    config = _slow_config(tmp_path)
    out = tmp_path / "out"
    seen_streaming = []

    def interrupt_when_running():
        _wait_for_steps([out / "a" / "trajectory.jsonl", out / "b" / "trajectory.jsonl"])
        # the episodes are in their slow final eval: their steps are already here
        seen_streaming.append(not (out / "a" / "status.json").exists())
        _thread.interrupt_main()

    threading.Thread(target=interrupt_when_running, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        _run(config, out, RayExecutor())
    assert seen_streaming == [True]
    summary = json.loads((out / "summary.json").read_text())
    assert [(s["task"], s["state"]) for s in summary] == [("a", "interrupted"),
                                                          ("b", "interrupted")]
    assert read_trajectory(out / "a" / "trajectory.jsonl").footer["reason"] == "interrupted"
    assert not (out / "c").exists()

    resumed = _run(config, out, RayExecutor())
    assert [(s.task, s.state, s.resolved) for s in resumed.statuses] == \
        [(name, "done", True) for name in "abc"]
    traj = read_trajectory(out / "a" / "trajectory.jsonl")  # from scratch: one episode
    assert traj.footer["reason"] == "submitted" and len(traj.steps) == 2
    buf = io.StringIO()
    again = _run(config, out, RayExecutor(), buf=buf)
    assert "skipped 3 finished episode(s) of 3" in buf.getvalue()
    assert [s.state for s in again.statuses] == ["skipped"] * 3


@inner
def test_a_node_dying_mid_episode_is_retried_once_elsewhere(cluster, tmp_path):
    from dgym_tui.runs.executors.ray import RayExecutor

    head, nodes = cluster
    config = _slow_config(tmp_path, names=("a", "b"))
    out = tmp_path / "out"
    result = {}
    runner = threading.Thread(target=lambda: result.setdefault(
        "summary", _run(config, out, RayExecutor())), daemon=True)
    runner.start()
    _wait_for_steps([out / "a" / "trajectory.jsonl", out / "b" / "trajectory.jsonl"])
    head.remove_node(nodes[1], allow_graceful=False)  # one episode runs there, mid-eval
    runner.join(timeout=240)
    nodes[1] = head.add_node(num_cpus=1, node_ip_address="127.0.0.1")  # for later tests
    assert "summary" in result, "the run did not end"
    assert [(s.task, s.state, s.resolved, s.steps) for s in result["summary"].statuses] == \
        [("a", "done", True, 2), ("b", "done", True, 2)]
    retried = []
    for name in ("a", "b"):
        traj = read_trajectory(out / name / "trajectory.jsonl")
        assert traj.finished and not traj.truncated and len(traj.steps) == 2
        retried.append(bool(traj.header["task"].get("retried")))
        assert read_status(out / name).state == "done"
    assert sorted(retried) == [False, True]  # exactly the lost episode ran again
    assert len(json.loads((out / "summary.json").read_text())) == 2


@inner
def test_a_repo_env_in_a_ray_actor_steps_like_a_local_one(cluster):
    from dgym_tui.benchmarks import get_benchmark
    from dgym_tui.core.types import StepResult, ToolCall
    from dgym_tui.integrations.ray_env import remote_env

    task = get_benchmark("mini").load("pagination")
    action = ToolCall("view", {"path": "paging.py"})
    actor = remote_env(task, terminal="local")
    first = ray.get(actor.reset.remote())
    remote = ray.get(actor.step.remote(action))
    ray.get(actor.close.remote())
    with task.make_env(terminal="local") as env:
        local_first, local = env.reset(), env.step(action)
    assert isinstance(first, StepResult) and isinstance(remote, StepResult)
    assert (first.score, first.max_score) == (local_first.score, local_first.max_score)
    assert remote.observation == local.observation and not remote.error


@inner
def test_the_docs_rl_example_runs_on_a_local_ray(cluster, tmp_path):
    """The docs' RepoEnv-in-an-actor example (docs/headless.md), as written, joined to the test cluster
    (its ``ray.init()`` reads ``RAY_ADDRESS``)."""
    head, _ = cluster
    readme = (ROOT / "docs" / "headless.md").read_text(encoding="utf-8")
    code = readme.split("<!-- ray-env-example -->\n```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path,
                          env=dict(os.environ, RAY_ADDRESS=head.address))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.splitlines() == ["3 / 5 tests pass at the start",
                                        "paging.py, lines 1-61 of 61:"]
