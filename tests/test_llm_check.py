"""`dgym llm-check` against the HTTP stub: latency, native tool calls, the advised mode."""

from __future__ import annotations

import json

import yaml

from dgym_tui.cli.main import main


def write_config(tmp_path, server, **extra):
    path = tmp_path / "llm.yaml"
    entry = {"model": "openai/stub", "api_base": server.url, "api_key": "x",
             "retry_base_delay": 0.001, **extra}
    path.write_text(yaml.safe_dump({"local": entry}))
    return path


VIEW = {"name": "view", "arguments": {"path": "cart.py"}}


def run(tmp_path, server, capsys, replies):
    server.script(replies)
    status = main(["llm-check", "local", "--config", str(write_config(tmp_path, server))])
    return status, capsys.readouterr().out


def test_native_tool_calls_advise_native(tmp_path, llm_server, capsys):
    status, out = run(tmp_path, llm_server, capsys, [
        {"content": "```tool_call\n" + json.dumps(VIEW) + "\n```",
         "usage": {"prompt_tokens": 120, "completion_tokens": 20}},
        {"tool_calls": [VIEW]}])
    assert status == 0
    text_request, tools_request = llm_server.requests
    assert "tools" not in text_request and "```tool_call" in text_request["messages"][0]["content"]
    assert [t["function"]["name"] for t in tools_request["tools"]] == ["view"]
    lines = out.splitlines()
    assert lines[0].startswith("LLM 'local': openai/stub at http://127.0.0.1:")
    assert "120 prompt + 20 completion tokens" in lines[1]
    assert "tool call in the text: tool_call_fence (valid)" in lines[1]
    assert "native tool_calls: yes (valid)" in lines[2]
    assert " s, " in lines[1] and " s, " in lines[2]  # latency in seconds
    assert lines[-1].startswith("tool_calling to use: native")


def test_call_in_content_advises_text(tmp_path, llm_server, capsys):
    # llama-cpp-python's default handler: the call comes back as fenced JSON in content
    fenced = {"content": "```json\n" + json.dumps(VIEW) + "\n```"}
    status, out = run(tmp_path, llm_server, capsys, [fenced, fenced])
    assert status == 0
    assert "native tool_calls: no; call in the text: fenced_json (valid)" in out
    assert out.splitlines()[-1].startswith("tool_calling to use: text")


def test_no_call_at_all_and_server_error_on_tools(tmp_path, llm_server, capsys):
    status, out = run(tmp_path, llm_server, capsys, [
        {"content": "The file cart.py probably contains a cart."},
        {"status": 400, "message": "tools are not supported by this model"}])
    assert status == 0
    assert "tool call in the text: none (not a valid view call)" in out
    assert "reply was: The file cart.py probably contains a cart." in out
    assert "with tools (native): failed" in out and "tools are not supported" in out
    assert "may be too small" in out.splitlines()[-1]


def test_dead_endpoint_exits_1(tmp_path, llm_server, capsys):
    path = write_config(tmp_path, llm_server, timeout=5)
    llm_server.close()
    assert main(["llm-check", "local", "--config", str(path)]) == 1
    out = capsys.readouterr().out
    assert "without tools (text format): failed after" in out
    assert "with tools (native): failed after" in out
    assert out.splitlines()[-1].startswith("tool_calling to use: - (the endpoint did not answer")


def test_unknown_entry_is_a_user_error(tmp_path, llm_server, capsys):
    path = write_config(tmp_path, llm_server)
    assert main(["llm-check", "nope", "--config", str(path)]) == 2
    assert "known entries: local" in capsys.readouterr().err


def test_native_calls_that_are_not_one_view_call_still_advise_native(tmp_path, llm_server,
                                                                   capsys):
    # issue 26: the server returned real tool_calls (two of them) and the text form was
    # valid; the advice was text, though the server's native tool calling works
    status, out = run(tmp_path, llm_server, capsys, [
        {"content": "```tool_call\n" + json.dumps(VIEW) + "\n```"},
        {"tool_calls": [VIEW, {"name": "view", "arguments": {"path": "test_cart.py"}}]}])
    assert status == 0
    assert "native tool_calls: yes (not a valid view call)" in out
    last = out.splitlines()[-1]
    assert last.startswith("tool_calling to use: native"), last
    assert "several_calls" in last
