"""The headless runner: two tiny tasks, result folders, skip/force, errors, workers."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from scripted import FIX, TOOLS, small_tools, stub_agent_files, tiny_config, tiny_policy

from dgym_tui.benchmarks import Task
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.runs.config import ConfigError, load_config
from dgym_tui.runs.runner import read_status, run_tasks


def test_run_two_tasks_writes_folders_and_summary(tmp_path, tiny, monkeypatch):
    small_tools(monkeypatch)
    config = tiny_config(tmp_path, tiny)
    buf = io.StringIO()
    summary = run_tasks(config, workers=2, policy_factory=tiny_policy,
                        console=Console(file=buf, width=160), progress=False)
    out = tmp_path / "out"
    assert [s.task for s in summary.statuses] == ["add", "mul"]
    assert summary.resolved == 2 and summary.errors == 0
    for name in ("add", "mul"):
        folder = out / name
        status = json.loads((folder / "status.json").read_text())
        assert status["state"] == "done" and status["resolved"] is True
        assert status["steps"] == 3 and status["reason"] == "submitted"
        assert status["prompt_tokens"] == 300 and status["cost"] == pytest.approx(0.003)
        traj = read_trajectory(folder / "trajectory.jsonl")
        assert traj.finished and traj.header["task"]["benchmark"] == "tiny"
        assert traj.header["task"]["name"] == name
        assert traj.header["environment"]["tools"] == list(TOOLS)
        assert "return a" in (folder / "patch.diff").read_text()
    saved = json.loads((out / "summary.json").read_text())
    assert [s["task"] for s in saved] == ["add", "mul"]
    table = buf.getvalue()
    assert f"watch and review it: dgym-tui {tmp_path / 'out'}" in table
    assert "add" in table and "mul" in table and "2/2" in table and "total" in table

    # done tasks are skipped on the next run...
    def must_not_run(task):
        raise AssertionError("a done task ran again")

    again = run_tasks(config, policy_factory=must_not_run, console=Console(file=io.StringIO()),
                      progress=False)
    assert [s.state for s in again.statuses] == ["skipped", "skipped"]
    assert again.resolved == 2

    # ...unless forced; a crashing policy gives state "error" and does not stop the run
    def crashing(task):
        if task.name == "mul":
            raise RuntimeError("policy exploded")
        return tiny_policy(task)

    forced = run_tasks(config, force=True, policy_factory=crashing,
                       console=Console(file=io.StringIO()), progress=False)
    assert [s.state for s in forced.statuses] == ["done", "error"]
    assert "policy exploded" in read_status(out / "mul").error


def test_solution_policy_resolves_both_tasks(tmp_path, tiny, monkeypatch):
    small_tools(monkeypatch)
    config = tiny_config(tmp_path, tiny, "tasks=[mul]")
    summary = run_tasks(config, console=Console(file=io.StringIO()), progress=False)
    assert [(s.task, s.resolved, s.steps) for s in summary.statuses] == [("mul", True, 2)]
    traj = read_trajectory(tmp_path / "out" / "mul" / "trajectory.jsonl")
    assert [s["action"]["name"] for s in traj.steps] == ["rewrite", "submit"]
    assert traj.header["config"]["policy"] == "solution"


def test_run_config_errors_are_one_line(tmp_path, tiny):
    with pytest.raises(ConfigError, match="config key 'tasks': unknown tiny task 'nope'"):
        run_tasks(tiny_config(tmp_path, tiny, "tasks=[nope]"), progress=False,
                  console=Console(file=io.StringIO()))
    with pytest.raises(ConfigError, match="config key 'benchmark'"):
        run_tasks(load_config(None, ["benchmark=no_such_bench", "policy=solution"]),
                  progress=False, console=Console(file=io.StringIO()))
    with pytest.raises(ConfigError, match="one worker"):
        run_tasks(tiny_config(tmp_path, tiny, "policy=human"), workers=2, progress=False,
                  console=Console(file=io.StringIO()))
    with pytest.raises(ConfigError, match="'mode'"):
        run_tasks(tiny_config(tmp_path, tiny, "mode=approve"), progress=False,
                  console=Console(file=io.StringIO()))


@pytest.mark.parametrize("override, message", [
    ("max_step=3", "unknown config key 'max_step'; did you mean max_steps?"),
    ("env.eval_timout=3", "unknown config key 'env.eval_timout'"),
    ("max_steps=zero", "config key 'max_steps' must be an integer >= 1, got 'zero'"),
    ("terminal=k8s", "config key 'terminal' must be one of local, bwrap, docker, got 'k8s'"),
    ("policy=agent", "config key 'llm' is missing"),
    ("tasks={a: 1}", "config key 'tasks' must be"),
    ("novalue", "bad override 'novalue'"),
    ("policy.sub=1", "unknown config key 'policy.sub'"),
])
def test_override_errors_name_the_key(tmp_path, tiny, override, message):
    with pytest.raises(ConfigError) as info:
        tiny_config(tmp_path, tiny, override)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_overrides_apply_in_order(tmp_path, tiny):
    config = tiny_config(tmp_path, tiny, "max_steps=7", "env.eval_timeout=30",
                     "benchmark.root=/elsewhere", "tasks=add", "stop_on_resolved=true")
    assert config.max_steps == 7 and config.env == {"eval_timeout": 30}
    assert config.benchmark == "tiny" and config.benchmark_options == {"root": "/elsewhere"}
    assert config.tasks == ["add"] and config.stop_on_resolved is True
    assert config.env_overrides() == {"eval_timeout": 30}  # the task chooses its terminal
    docker = tiny_config(tmp_path, tiny, "terminal=docker", "image=img:1")
    assert docker.env_overrides() == {"terminal": "docker", "image": "img:1"}


def test_example_configs_are_valid():
    folder = Path(__file__).resolve().parent.parent / "data" / "configs"
    files = sorted(folder.glob("*.yaml"))
    assert files, "data/configs holds example run configs"
    for file in files:
        config = load_config(file, ["llm=any"])  # agent configs need an llm entry name
        assert config.benchmark and config.max_steps >= 1


def test_dgym_run_with_the_llm_agent_over_the_stub(tmp_path, tiny, llm_server, monkeypatch):
    """`dgym run` end to end: config file + llm.yaml entry -> LLMAgent -> HTTP stub."""
    from dgym_tui.cli.main import main

    llm_server.script([
        {"tool_calls": [{"name": "view", "arguments": {"path": "calc.py"}}],
         "usage": {"prompt_tokens": 40, "completion_tokens": 4}},
        {"tool_calls": [{"name": "rewrite", "arguments": FIX.arguments}],
         "usage": {"prompt_tokens": 60, "completion_tokens": 9}},
        {"tool_calls": [{"name": "submit", "arguments": {}}],
         "usage": {"prompt_tokens": 80, "completion_tokens": 2}},
    ])
    agent, llm_yaml = stub_agent_files(tmp_path, llm_server)
    config = tmp_path / "agent.yaml"
    config.write_text(f"benchmark: {{name: tiny, root: {tiny}}}\ntasks: [add]\npolicy: agent\n"
                      f"agent: {agent}\nllm: stub\nllm_config: {llm_yaml}\nmax_steps: 6\n")
    out = tmp_path / "agent-out"
    assert main(["run", str(config), "--output", str(out), "--no-progress"]) == 0
    status = json.loads((out / "add" / "status.json").read_text())
    assert status["state"] == "done" and status["resolved"] is True, status
    assert status["steps"] == 3
    assert (status["prompt_tokens"], status["completion_tokens"]) == (180, 15)
    traj = read_trajectory(out / "add" / "trajectory.jsonl")
    assert traj.header["config"]["llm"] == "stub"
    assert [t["function"]["name"] for t in traj.header["tools"]] == list(TOOLS)
    # the agent really offered the env's tools to the model
    offered = [t["function"]["name"] for t in llm_server.requests[0]["tools"]]
    assert offered == list(TOOLS)


# ---------------------------------------------------------------- Ctrl-C / SIGTERM
def _slow_tasks(root: Path, token: str, names=("a", "b", "c")) -> Path:
    """Mini-style tasks whose tests sleep 120 s once the reference fix (x = 2) is in."""
    for name in names:
        task = root / name
        task.mkdir(parents=True)
        (task / "x.py").write_text("x = 1\n")
        (task / f"test_{token}.py").write_text(
            "import time\nimport x\n\n\ndef test_slow():\n    time.sleep(120 if x.x == 2 else 0)\n")
        (task / ".fix.patch").write_text("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
        (task / "task.yaml").write_text(f"description: slow\nentrypoint: python -m pytest -q "
                                        f"test_{token}.py\nfix: .fix.patch\n")
    return root


def _alive_with(token: str) -> list[str]:
    """Command lines of live processes that mention ``token``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if token in cmd and "pytest" in cmd:
            found.append(cmd)
    return found


def _wait_for_step(paths: list[Path], timeout: float = 120.0) -> None:
    """Wait until each trajectory has recorded a step (the episodes are in their submit)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(p.is_file() and '"type": "step"' in p.read_text() for p in paths):
            return
        time.sleep(0.2)
    raise AssertionError(f"no step recorded in time: {paths}")


@pytest.mark.parametrize("workers, signum", [(2, "SIGINT"), (1, "SIGTERM")])
def test_interrupt_stops_the_run_cleanly(tmp_path, workers, signum):
    import signal
    import subprocess
    import sys
    import time
    import uuid

    token = f"slow{uuid.uuid4().hex[:10]}"
    tasks = _slow_tasks(tmp_path / "tasks", token)
    config = tmp_path / "slow.yaml"
    config.write_text(f"benchmark: {{name: mini, path: {tasks}}}\npolicy: solution\n"
                      f"workers: {workers}\n")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from dgym_tui.cli.main import main; sys.exit(main())",
         "run", str(config), "--output", str(out), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        running = ["a", "b"][:workers]
        _wait_for_step([out / name / "trajectory.jsonl" for name in running])
        deadline = time.monotonic() + 60  # a loaded machine may not have started it yet
        while not _alive_with(token) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _alive_with(token), "the slow submit eval should be running"
        proc.send_signal(getattr(signal, signum))
        started = time.monotonic()
        _, err = proc.communicate(timeout=60)
        stopped_in = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "dgym: interrupted" and "Traceback" not in err
    assert stopped_in < 30  # not the 120 s the tests sleep
    time.sleep(0.5)
    assert not _alive_with(token), "no test process outlives the run"
    summary = json.loads((out / "summary.json").read_text())
    assert [(s["task"], s["state"], s["reason"]) for s in summary] == \
        [(name, "interrupted", "interrupted") for name in running]
    for name in running:
        status = read_status(out / name)
        assert status.state == "interrupted" and status.steps >= 1
        traj = read_trajectory(out / name / "trajectory.jsonl")
        assert traj.finished and traj.footer["reason"] == "interrupted"
        assert traj.steps[0]["action"]["name"] == "rewrite"
        assert "+x = 2" in traj.footer["patch"]
    assert not (out / "c").exists()  # queued, never started


def test_ctrl_c_delivered_to_a_worker_thread_stops_the_run(tmp_path):
    """The kernel may hand a process's SIGINT to any of its threads. When a worker
    thread got it, the main thread waited on in ``shutdown(wait=True)`` until every
    episode had ended on its own (the clean-clone CI run of 28cfe8c hung for a
    minute in test_interrupt_stops_the_run_cleanly); it must stop them now."""
    import signal
    import threading
    import time

    from dgym_tui.runs.executors.local import LocalExecutor
    from dgym_tui.runs.runner import TaskStatus

    workers: list[int] = []
    both_started = threading.Barrier(3)

    class SlowJob:  # each episode runs until the run's stop signal (at most 30 s)
        def run_episode(self, name, stop):
            workers.append(threading.get_ident())
            both_started.wait(10)
            stop.event.wait(30)
            return TaskStatus(task=name, state="interrupted", reason="interrupted")

        def stopped_status(self, name):
            return TaskStatus(task=name, state="interrupted")

    class Quiet:
        def started(self, name): pass
        def finished(self, status): pass

    def ctrl_c_to_a_worker():
        both_started.wait(10)
        signal.pthread_kill(workers[0], signal.SIGINT)

    sender = threading.Thread(target=ctrl_c_to_a_worker)
    sender.start()
    results: dict = {}
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        LocalExecutor(workers=2).run(SlowJob(), ["a", "b", "c"], results, Quiet())
    stopped_in = time.monotonic() - started
    sender.join()
    assert stopped_in < 10  # not the 30 s the episodes wait
    assert sorted(results) == ["a", "b"]  # "c" was queued: never started


def test_interrupt_while_an_environment_is_being_built(tmp_path, tiny, monkeypatch):
    """Ctrl-C comes while an episode is still building its environment (no terminal yet):
    the terminal it starts afterwards is stopped too, so its slow initial eval does not
    hold the run for a minute."""
    import os
    import signal
    import time

    orig = Task.make_env

    def make_env(self, **overrides):
        env = orig(self, **{**overrides, "entrypoint": "sleep 60", "tools": TOOLS})
        real_reset = env.reset

        def reset(*args, **kwargs):
            if self.name == "add":
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C reaches the main thread...
                time.sleep(1.0)  # ...which stops the episodes before this one has a terminal
            return real_reset(*args, **kwargs)

        env.reset = reset
        return env

    monkeypatch.setattr(Task, "make_env", make_env)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_tasks(tiny_config(tmp_path, tiny), workers=2, policy_factory=tiny_policy,
                  console=Console(file=io.StringIO()), progress=False)
    assert time.monotonic() - started < 30  # not the 60 s of the initial eval
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    states = {s["task"]: s["state"] for s in summary}  # mul may not have started yet
    assert states.pop("add") == "interrupted" and set(states.values()) <= {"interrupted"}


def test_a_run_resumes_interrupted_episodes_from_scratch(tmp_path, tiny, monkeypatch, capsys):
    """A second run skips finished episodes and says so; an interrupted one runs again from
    an empty folder; --rerun runs everything again."""
    from dgym_tui.cli.main import main

    small_tools(monkeypatch)
    config = tiny_config(tmp_path, tiny)
    out = tmp_path / "out"
    run_tasks(config, console=Console(file=io.StringIO()), progress=False)
    status = json.loads((out / "mul" / "status.json").read_text())
    (out / "mul" / "status.json").write_text(json.dumps({**status, "state": "interrupted"}))
    (out / "mul" / "leftover.txt").write_text("from the interrupted attempt")
    first_add = (out / "add" / "trajectory.jsonl").read_text()

    buf = io.StringIO()
    again = run_tasks(config, console=Console(file=buf, width=200), progress=False)
    assert "skipped 1 finished episode(s) of 2" in buf.getvalue()
    assert [(s.task, s.state) for s in again.statuses] == [("add", "skipped"), ("mul", "done")]
    assert not (out / "mul" / "leftover.txt").exists()
    assert read_status(out / "mul").resolved
    assert (out / "add" / "trajectory.jsonl").read_text() == first_add  # untouched

    capsys.readouterr()
    config_file = tmp_path / "run.yaml"
    assert main(["run", str(config_file), "--rerun", "--no-progress"]) == 0
    assert "skipped" not in capsys.readouterr().err
    assert (out / "add" / "trajectory.jsonl").read_text() != first_add  # a new episode
    assert [s["state"] for s in json.loads((out / "summary.json").read_text())] == ["done"] * 2
