"""The `dgym` command line: replay (no divergence / divergence / fork), export,
play on stdin, run, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from scripted import ENTRYPOINT, FIX, TOOLS, ScriptedPolicy, write_repo

from dgym_tui.benchmarks.local import folder_task
from dgym_tui.cli.main import main
from dgym_tui.core.types import ToolCall
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.launch.open import open_session

DGYM = [sys.executable, "-c", "import sys; from dgym_tui.cli.main import main; sys.exit(main())"]


@pytest.fixture
def recorded(tmp_path):
    """A finished approve-mode episode on the calc repo: view, edited fix, rejected, eval, submit."""
    repo = write_repo(tmp_path / "repo")
    path = tmp_path / "episode.jsonl"
    policy = ScriptedPolicy([ToolCall("view", {"path": "calc.py"}),
                             ToolCall("rewrite", {"path": "calc.py", "start": 2, "end": 2,
                                                  "new_code": "    return b + a + 0"}),
                             ToolCall("view", {"path": "test_calc.py"})])
    session = open_session(folder_task(repo, entrypoint=ENTRYPOINT, name="calc"), policy, "approve",
                           trajectory=path, overrides={"tools": TOOLS})
    env = session.env
    try:
        session.start()
        session.approve(session.propose())
        session.edit(session.propose(), FIX)
        session.reject(session.propose(), "enough reading")
        session.act(ToolCall("eval", {}))
        session.act(ToolCall("submit", {}))
    finally:
        env.close()
    return path


def test_replay_reports_no_divergence(recorded, capsys):
    assert main(["replay", str(recorded)]) == 0
    out = capsys.readouterr().out
    assert "replayed 5 step(s)" in out and "no divergence" in out


@pytest.fixture
def ci_host(monkeypatch):
    """The host sets ``CI`` (pytest then prints whole assertion explanations in its short summary)."""
    monkeypatch.setenv("CI", "true")


def test_a_local_recording_replays_the_same_in_bwrap_whatever_the_host_sets(ci_host, recorded, capsys):
    """Recorded on ``local`` with ``CI`` set on the host, replayed in bwrap (a trajectory cannot
    lower the sandbox): ``local`` passes the same allow-listed environment, so no divergence.
    Before, local passed ``CI`` to pytest and the sandbox did not; the eval's summary differed."""
    assert main(["replay", str(recorded)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sandbox: bwrap") and "no divergence" in out, out


def test_replay_reports_a_divergent_step(recorded, capsys):
    lines = recorded.read_text().splitlines()
    step = json.loads(lines[1])
    step["observation"] = step["observation"].replace("return a - b", "return a / b")
    lines[1] = json.dumps(step)
    recorded.write_text("\n".join(lines) + "\n")
    assert main(["replay", str(recorded)]) == 1
    out = capsys.readouterr().out
    assert "step 1: DIVERGED" in out and "diverged at step(s) 1" in out
    assert "-" in out and "return a / b" in out


def test_replay_show_and_until(recorded, capsys):
    assert main(["replay", str(recorded), "--show", "--until", "2"]) == 0
    out = capsys.readouterr().out
    assert "step 1 [agent/approved] view" in out and "step 2 [human/edited] rewrite" in out
    assert "step 3" not in out
    assert main(["replay", str(recorded), "--until", "2"]) == 0
    assert "replayed 2 step(s)" in capsys.readouterr().out


def test_fork_continues_with_a_person_typing(recorded, tmp_path, monkeypatch, capsys):
    # fork after step 1 (the view): the person fixes the bug and submits on stdin
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(
        'rewrite calc.py start=2 end=2 "new_code=    return a + b"\nsubmit\n'))
    out_path = tmp_path / "fork.jsonl"
    assert main(["replay", str(recorded), "--until", "1", "--human", "-o", str(out_path)]) == 0
    assert "forked at step 1" in capsys.readouterr().out
    fork = read_trajectory(out_path)
    assert fork.header["config"]["forked_from"]["step"] == 1
    assert [s["decision"] for s in fork.steps] == ["approved", "manual", "manual"]
    assert fork.footer["resolved"] is True


def test_export_debug_gym_and_sft(recorded, tmp_path, capsys):
    out = tmp_path / "dg.json"
    assert main(["export", str(recorded), "--format", "debug-gym", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc) >= {"problem", "config", "tools", "uuid", "success", "log"}
    assert doc["problem"] == "calc" and doc["success"] is True
    assert [e["step_id"] for e in doc["log"]] == [0, 1, 2, 3, 4, 5]
    assert doc["log"][0]["action"] is None
    assert doc["log"][2]["action"]["arguments"]["new_code"] == "    return a + b"
    assert doc["log"][3]["action"] is None and "enough reading" in doc["log"][3]["obs"]
    assert doc["log"][1]["token_usage"] == {"prompt": 100, "response": 20}

    assert main(["export", str(tmp_path), "--format", "sft"]) == 0  # a folder: finds *.jsonl
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    conv = json.loads(lines[0])
    roles = [m["role"] for m in conv["messages"]]
    # system, task, then 4 executed actions (the rejected one is left out)
    assert roles == ["system", "user"] + ["assistant", "tool"] * 4
    calls = [m["tool_calls"][0] for m in conv["messages"] if m["role"] == "assistant"]
    assert [c["function"]["name"] for c in calls] == ["view", "rewrite", "eval", "submit"]
    assert json.loads(calls[1]["function"]["arguments"])["new_code"] == "    return a + b"
    tool_msgs = [m for m in conv["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == [c["id"] for c in calls]
    assert conv["meta"]["resolved"] is True and conv["meta"]["actors"] == ["agent", "human"]


def test_play_reads_actions_from_stdin(tmp_path):
    repo = write_repo(tmp_path / "repo")
    traj = tmp_path / "play.jsonl"
    stdin = ('view calc.py\nview path=calc.py path=x\nrewrite calc.py start=2 end=2 "new_code=    return a + b"\n'
             "eval\nsubmit\n")
    proc = subprocess.run(DGYM + ["play", str(repo), "--entrypoint", ENTRYPOINT,
                                  "-o", str(traj)], input=stdin, text=True,
                          capture_output=True, timeout=240, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "error:" in proc.stdout  # the bad line was explained, not recorded
    assert "episode over (submitted): resolved=True" in proc.stdout
    recorded = read_trajectory(traj)
    assert [s["action"]["name"] for s in recorded.steps] == ["view", "rewrite", "eval", "submit"]
    assert {s["actor"] for s in recorded.steps} == {"human"}


def test_play_ends_cleanly_at_end_of_input(tmp_path):
    repo = write_repo(tmp_path / "repo")
    traj = tmp_path / "p.jsonl"
    proc = subprocess.run(DGYM + ["play", str(repo), "--entrypoint", ENTRYPOINT,
                                  "-o", str(traj)], input="view calc.py\n", text=True,
                          capture_output=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr
    recorded = read_trajectory(traj)
    assert len(recorded) == 1 and recorded.footer["reason"] == "quit"


@pytest.mark.parametrize("argv, message", [
    (["run", "{config}", "-p", "max_stepz=3"], "unknown config key 'max_stepz'"),
    (["run", "{syntax}"], "line 4: invalid YAML (expected ',' or ']'"),
    (["run", "no_such_config"], "not found; bundled configs: "),
    (["run", "{config}", "-p", "benchmark=nope"], "unknown benchmark 'nope'"),
    (["run", "{config}", "-p", "tasks=nope"], "unknown mini task 'nope'"),
    (["run", "{config}", "-p", "benchmark=local", "-p", "benchmark.path=/no/such/repo"],
     "no such folder: /no/such/repo"),
    (["run", "{config}", "-p", "benchmark=local"], "benchmark 'local' needs the option 'path'"),
    (["run", "{config}", "-p", "benchmark.colour=red"], "benchmark 'mini' has no option 'colour'"),
    (["run", "{config}", "-p", "max_steps"], "bad override 'max_steps'; write -p key.sub=value"),
    (["run", "{config}", "-p", "max_steps=-1"], "'max_steps' must be an integer >= 1, got -1"),
    (["run", "{config}", "-p", "terminal=foo"], "'terminal' must be one of local, bwrap, docker"),
    (["run", "{config}", "-n", "0"], "expected a whole number >= 1, got 0"),
    (["run", "{config}", "-p", "policy=agent", "-p", "llm=nope"], "no LLM config at"),
    (["run"], "the following arguments are required: config"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["replay", "{notjson}"], ":1: corrupt entry (not JSON"),
    (["replay", "{empty}"], "empty trajectory (no header)"),
    (["replay", "{cut}"], "empty trajectory (no header)"),
    (["replay", "{other}"], ":1: unknown entry type"),
    (["replay", "{tmp}"], "cannot read trajectory"),
    (["replay", "{cut}", "--until", "x"], "invalid int value: 'x'"),
    (["export", "{empty}", "--format", "html"], "invalid choice: 'html'"),
    (["export", "{notjson}", "--format", "sft"], ":1: corrupt entry (not JSON"),
    (["list-tasks", "local"], "needs the option 'path'"),
    (["init-llm-config", "{notjson}"], "notjson.txt: file exists"),
    (["run", "{config}", "--output", "{notjson}/out"], "notjson.txt/out: not a directory"),
    (["play", "/no/such/repo"], "no such folder: /no/such/repo"),
    (["play", "--task", "nope"], "unknown mini task 'nope'"),
    (["play", "--task", "mini/"], "--task needs BENCH/TASK or TASK"),
    (["play", "--task", "nope", "--benchmark", "mini"], "unknown mini task 'nope'"),
    (["play", "--task", "pagination", "--max-steps", "-1"], "expected a whole number >= 1"),
    (["run", "{config}", "-p", "env.pdb_timeout=-1"], "'env.pdb_timeout' must be a positive"),
    (["run", "/no/such.yaml"], "config file /no/such.yaml not found"),
    (["run", "{config}", "--shared-output"], "--shared-output needs --executor ray"),
    (["run", "{config}", "--address", "auto"], "--address needs --executor ray"),
    (["replay", "/no/such.jsonl"], "no such trajectory file"),
    (["export", "/no/such.jsonl", "--format", "sft"], "no such trajectory file"),
    (["list-tasks", "nobench"], "unknown benchmark 'nobench'"),
    (["play"], "give a repository PATH or --task"),
])
def test_user_errors_are_one_line_exit_2(tmp_path, argv, message):
    files = {"config": "benchmark: mini\npolicy: solution\n",
             "syntax": "benchmark: mini\npolicy: solution\ntasks: [a, b\n",
             "notjson": "hello\n", "empty": "", "other": '{"a": 1}\n',
             "cut": '{"type": "header", "schema_version": 1, "task": {"na'}
    names = {"tmp": str(tmp_path)}
    for key, text in files.items():
        (tmp_path / f"{key}.txt").write_text(text)
        names[key] = str(tmp_path / f"{key}.txt")
    argv = [a.format(**names) if a.startswith("{") else a for a in argv]
    env = {k: v for k, v in os.environ.items() if k != "DGYM_LLM_CONFIG"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")  # no llm.yaml there
    proc = subprocess.run(DGYM + argv, capture_output=True, text=True, timeout=120, check=False,
                          cwd=tmp_path, env=env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("dgym") and ": error: " in proc.stderr, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_init_llm_config_and_list_tasks(tmp_path, capsys):
    assert main(["init-llm-config", str(tmp_path)]) == 0
    assert (tmp_path / "llm.yaml").is_file()
    assert main(["init-llm-config", str(tmp_path)]) == 2  # never overwritten
    assert "already exists" in capsys.readouterr().err
    assert main(["list-tasks"]) == 0
    assert "mini" in capsys.readouterr().out.split()
    assert main(["list-tasks", "local", "-p", f"path={write_repo(tmp_path / 'r')}",
                 "-p", "entrypoint=python -m pytest"]) == 0
    assert capsys.readouterr().out.strip()


def test_init_llm_config_writes_the_file_named_by_o(tmp_path, capsys):
    target = tmp_path / "conf" / "my-llms.conf"
    assert main(["init-llm-config", "-o", str(target)]) == 0
    assert "model:" in target.read_text() and str(target) in capsys.readouterr().out
    assert main(["init-llm-config", "-o", str(target)]) == 2  # never overwritten
    assert "already exists" in capsys.readouterr().err


def test_cli_does_not_import_heavy_libraries():
    code = ("import sys; import dgym_tui.cli.main; "
            "print('litellm' in sys.modules, 'textual' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=False).stdout
    assert out.split() == ["False", "False"]


def test_fork_with_an_unknown_llm_entry_is_one_line(recorded, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DGYM_LLM_CONFIG"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    base = DGYM + ["replay", str(recorded), "--until", "1", "--llm", "nope"]
    proc = subprocess.run(base, capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode == 2 and proc.stderr.startswith("dgym: error: no LLM config at ")
    assert str(tmp_path / "xdg") in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert main(["init-llm-config", str(tmp_path / "cfg")]) == 0
    proc = subprocess.run(base + ["--llm-config", str(tmp_path / "cfg" / "llm.yaml")],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode == 2 and "no LLM entry 'nope'" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert not (tmp_path / "episode.fork1.jsonl").exists()  # nothing started


def test_play_task_without_benchmark_means_mini(tmp_path):
    traj = tmp_path / "t.jsonl"
    proc = subprocess.run(DGYM + ["play", "--task", "pagination", "-o", str(traj)],
                          input="listdir\n", text=True, capture_output=True, timeout=240,
                          check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    recorded = read_trajectory(traj)
    assert recorded.header["task"]["benchmark"] == "mini"
    assert recorded.header["task"]["name"] == "pagination"
    assert "paging.py" in recorded.steps[0]["observation"]


def test_fork_by_a_person_whose_input_ends_at_once(recorded, tmp_path):
    out = tmp_path / "fork.jsonl"
    proc = subprocess.run(DGYM + ["replay", str(recorded), "--until", "2", "--human",
                                  "-o", str(out)], input="", text=True, capture_output=True,
                          timeout=240, check=False)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    fork = read_trajectory(out)
    assert len(fork) == 2 and fork.footer["reason"] == "quit"


def test_episodes_use_dgyms_own_python_not_the_first_on_path(tmp_path):
    """A `python` earlier on PATH (an unactivated venv, pipx) must not run the tasks."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python").write_text("#!/bin/sh\necho 'not the interpreter of dgym'\nexit 3\n")
    (fake / "python").chmod(0o755)
    repo = write_repo(tmp_path / "repo")
    traj = tmp_path / "t.jsonl"
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    proc = subprocess.run(DGYM + ["play", str(repo), "--entrypoint", ENTRYPOINT, "-o", str(traj)],
                          input='rewrite calc.py start=2 end=2 "new_code=    return a + b"\n'
                                "submit\n", text=True, capture_output=True, timeout=240,
                          check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    recorded = read_trajectory(traj)
    assert "not the interpreter" not in recorded.steps[-1]["observation"]
    assert recorded.footer["resolved"] is True
