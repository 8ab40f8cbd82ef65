"""llm.yaml loading and the real litellm client path against the HTTP stub."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from dgym_tui.llm.client import (
    LLM,
    ContextTooLong,
    LLMConfig,
    LLMConfigError,
    LLMError,
    MalformedResponse,
    context_overflow,
    default_config_path,
    drop_oldest,
    fewest_units_to_drop,
    get_llm_config,
    load_llm_configs,
    write_llm_config_template,
)


def trim_messages(messages, fits, keep_first=2):
    """How LLM.complete trims a prompt: the fewest history units dropped so it fits."""
    return drop_oldest(messages, fewest_units_to_drop(messages, fits, keep_first), keep_first)


def stub_config(server, **overrides) -> LLMConfig:
    values = {"name": "stub", "model": "openai/stub", "api_base": server.url, "api_key": "x",
              "retry_base_delay": 0.001, "retries": 3}
    values.update(overrides)
    return LLMConfig(**values)


SYSTEM = {"role": "system", "content": "You are a test."}
TASK = {"role": "user", "content": "Fix the bug."}


# -- llm.yaml -----------------------------------------------------------------

def write_yaml(path, data):
    path.write_text(yaml.safe_dump(data))
    return path


def test_config_lookup_order(tmp_path, monkeypatch):
    monkeypatch.delenv("DGYM_LLM_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert default_config_path() == tmp_path / "xdg" / "dgym-tui" / "llm.yaml"
    (tmp_path / "xdg" / "dgym-tui").mkdir(parents=True)
    write_yaml(tmp_path / "xdg" / "dgym-tui" / "llm.yaml", {"a": {"model": "openai/a"}})
    assert list(load_llm_configs()) == ["a"]
    env_file = write_yaml(tmp_path / "env.yaml", {"b": {"model": "openai/b"}})
    monkeypatch.setenv("DGYM_LLM_CONFIG", str(env_file))
    assert list(load_llm_configs()) == ["b"]
    explicit = write_yaml(tmp_path / "explicit.yaml", {"c": {"model": "openai/c",
                                                              "tool_calling": "text"}})
    config = get_llm_config("c", explicit)
    assert (config.model, config.tool_calling, config.temperature) == ("openai/c", "text", 0.0)


def test_missing_config_says_how_to_create(tmp_path):
    with pytest.raises(LLMConfigError, match="dgym init-llm-config"):
        load_llm_configs(tmp_path / "nope.yaml")


def test_unknown_entry_lists_known(tmp_path):
    path = write_yaml(tmp_path / "llm.yaml", {"gpt": {"model": "openai/gpt"},
                                              "local": {"model": "openai/x"}})
    with pytest.raises(LLMConfigError) as info:
        get_llm_config("claude", path)
    assert "known entries: gpt, local" in str(info.value)
    assert "\n" not in str(info.value)


def test_invalid_entries(tmp_path):
    with pytest.raises(LLMConfigError, match="needs a 'model'"):
        load_llm_configs(write_yaml(tmp_path / "a.yaml", {"x": {"api_base": "http://h"}}))
    with pytest.raises(LLMConfigError, match="unknown key.*modle"):
        load_llm_configs(write_yaml(tmp_path / "b.yaml", {"x": {"model": "m", "modle": 1}}))
    with pytest.raises(LLMConfigError, match="tool_calling"):
        load_llm_configs(write_yaml(tmp_path / "c.yaml", {"x": {"model": "m",
                                                                "tool_calling": "xml"}}))
    bad = tmp_path / "d.yaml"
    bad.write_text("x: [unclosed\n")
    with pytest.raises(LLMConfigError, match="not valid YAML"):
        load_llm_configs(bad)


def test_missing_api_key_env_names_the_variable(monkeypatch):
    monkeypatch.delenv("DGYM_TEST_KEY", raising=False)
    config = LLMConfig(name="k", model="openai/k", api_key_env="DGYM_TEST_KEY")
    with pytest.raises(LLMConfigError, match="DGYM_TEST_KEY"):
        LLM(config)
    monkeypatch.setenv("DGYM_TEST_KEY", "secret")
    assert LLM(config).api_key == "secret"


def test_template_is_valid_and_never_overwritten(tmp_path):
    path = write_llm_config_template(tmp_path / "cfg")
    assert path == tmp_path / "cfg" / "llm.yaml"
    text = path.read_text()
    assert text.lstrip().startswith("#")
    configs = load_llm_configs(path)
    assert {"native", "text"} == {c.tool_calling for c in configs.values()}
    assert all(c.model for c in configs.values())
    with pytest.raises(LLMConfigError, match="already exists"):
        write_llm_config_template(tmp_path / "cfg")


# -- the client path against the stub ---------------------------------------------

def test_tool_call_reply_and_request(llm_server):
    llm_server.script([{"content": "Looking.", "usage": {"prompt_tokens": 42,
                                                         "completion_tokens": 7},
                        "tool_calls": [{"id": "call_1", "name": "view",
                                        "arguments": {"path": "a.py"}}]}])
    tools = [{"type": "function", "function": {"name": "view", "description": "show a file",
                                               "parameters": {"type": "object", "properties": {
                                                   "path": {"type": "string"}}}}}]
    response = LLM(stub_config(llm_server, max_tokens=100)).complete([SYSTEM, TASK], tools=tools)
    assert response.content == "Looking."
    assert response.tool_calls == [{"id": "call_1", "type": "function", "function": {
        "name": "view", "arguments": '{"path": "a.py"}'}}]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (42, 7)
    assert response.usage.cost == 0.0  # the stub model has no known price
    (request,) = llm_server.requests
    assert request["model"] == "stub"
    assert request["messages"] == [SYSTEM, TASK]
    assert request["tools"][0]["function"]["name"] == "view"
    assert request["max_tokens"] == 100 and request["temperature"] == 0.0


def test_cost_from_configured_prices(llm_server):
    llm_server.script([{"content": "hi", "usage": {"prompt_tokens": 1000,
                                                   "completion_tokens": 100}}])
    llm = LLM(stub_config(llm_server, input_cost_per_token=1e-6, output_cost_per_token=1e-5))
    assert llm.complete([SYSTEM, TASK]).usage.cost == pytest.approx(0.002)


def test_rate_limit_and_server_error_are_retried(llm_server):
    llm_server.script([{"status": 429, "message": "slow down"}, {"status": 500},
                       {"status": 503}, {"content": "done"}])
    delays = []
    llm = LLM(stub_config(llm_server, retry_base_delay=0.01), sleep=delays.append)
    assert llm.complete([SYSTEM, TASK]).content == "done"
    assert len(llm_server.requests) == 4
    assert delays == pytest.approx([0.01, 0.02, 0.04])  # exponential backoff


def test_retry_after_header_is_honoured(llm_server):
    llm_server.script([{"status": 429, "headers": {"Retry-After": "0.25"}}, {"content": "ok"}])
    delays = []
    assert LLM(stub_config(llm_server), sleep=delays.append).complete([SYSTEM, TASK]).content == "ok"
    assert delays == [0.25]


def test_retries_are_bounded(llm_server):
    llm_server.script([{"status": 500}] * 5)
    llm = LLM(stub_config(llm_server, retries=2))
    with pytest.raises(LLMError, match="after 3 attempts"):
        llm.complete([SYSTEM, TASK])
    assert len(llm_server.requests) == 3


def test_unreachable_server_is_retried_then_reported(llm_server):
    config = stub_config(llm_server, retries=1, timeout=5)
    llm_server.close()  # nothing listens on the port any more
    delays = []
    with pytest.raises(LLMError, match="after 2 attempts"):
        LLM(config, sleep=delays.append).complete([SYSTEM, TASK])
    assert delays == [0.001]


def test_auth_failure_names_env_var(llm_server, monkeypatch):
    monkeypatch.setenv("DGYM_STUB_KEY", "wrong")
    llm_server.script([{"status": 401, "message": "Incorrect API key"}])
    llm = LLM(stub_config(llm_server, api_key=None, api_key_env="DGYM_STUB_KEY"))
    with pytest.raises(LLMConfigError, match="DGYM_STUB_KEY"):
        llm.complete([SYSTEM, TASK])
    assert len(llm_server.requests) == 1  # not retried
    assert llm_server.requests[0]["model"] == "stub"


def test_bad_request_is_not_retried(llm_server):
    llm_server.script([{"status": 400, "message": "bad things"}])
    with pytest.raises(LLMError, match="bad things"):
        LLM(stub_config(llm_server)).complete([SYSTEM, TASK])
    assert len(llm_server.requests) == 1


def history(n: int, size: int = 400) -> list[dict]:
    """n executed tool-call turns, each an assistant call + its tool result."""
    out = []
    for i in range(n):
        out.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{i}", "type": "function",
            "function": {"name": "eval", "arguments": "{}"}}]})
        out.append({"role": "tool", "tool_call_id": f"call_{i}",
                    "content": f"observation {i} " + "word " * size})
    return out


def test_trim_messages_keeps_head_and_latest():
    messages = [SYSTEM, TASK, *history(10)]
    trimmed, dropped = trim_messages(messages, lambda m: len(m) <= 7)
    assert trimmed[:2] == [SYSTEM, TASK]
    assert trimmed[-2:] == messages[-2:]
    assert "removed" in trimmed[2]["content"] and trimmed[2]["role"] == "user"
    assert len(trimmed) == 7 and dropped == 16
    # assistant calls and their results are dropped together
    assert trimmed[3]["role"] == "assistant"
    with pytest.raises(ContextTooLong):
        trim_messages(messages, lambda m: len(m) <= 3)
    assert trim_messages(messages, lambda m: True) == (messages, 0)


def test_long_prompt_is_trimmed_before_sending(llm_server):
    llm_server.script([{"content": "ok"}])
    llm = LLM(stub_config(llm_server, context_window=3000, max_tokens=500))
    messages = [SYSTEM, TASK, *history(20)]
    assert llm.count_tokens(messages) > 2500
    response = llm.complete(messages)
    sent = llm_server.requests[0]["messages"]
    assert sent[:2] == [SYSTEM, TASK]
    assert sent[-1]["content"] == messages[-1]["content"]  # latest observation kept
    assert "observation 0 " not in str(sent)                 # oldest dropped
    assert 3 < len(sent) < len(messages)
    assert llm.count_tokens(sent) <= 2500
    assert response.trimmed == len(messages) - len(sent) + 1  # +1: the note


def test_provider_context_overflow_trims_and_retries(llm_server):
    overflow = {"status": 400, "code": "context_length_exceeded",
                "message": "This model's maximum context length is 8192 tokens. However, "
                           "your messages resulted in 9100 tokens."}
    llm_server.script([overflow, overflow, {"content": "fits now"}])
    messages = [SYSTEM, TASK, *history(8, size=5)]
    assert LLM(stub_config(llm_server)).complete(messages).content == "fits now"
    sizes = [len(r["messages"]) for r in llm_server.requests]
    assert sizes[0] == len(messages) and sizes[0] > sizes[1] > sizes[2]
    for request in llm_server.requests[1:]:
        assert request["messages"][:2] == [SYSTEM, TASK]
        assert request["messages"][-1] == messages[-1]


def test_provider_overflow_with_nothing_left_to_drop(llm_server):
    llm_server.script([{"status": 400, "code": "context_length_exceeded",
                        "message": "This model's maximum context length is 10 tokens."}])
    with pytest.raises(ContextTooLong):
        LLM(stub_config(llm_server)).complete([SYSTEM, TASK])


def test_light_modules_do_not_import_litellm():
    code = ("import sys, dgym_tui.llm.client, dgym_tui.episode.policy, dgym_tui.policies.agent, dgym_tui.policies.human\n"
            "from dgym_tui.policies.agent import LLMAgent, load_agent_spec\n"
            "load_agent_spec('debug_agent')\n"
            "from dgym_tui.llm.client import LLMConfig\n"
            "LLMAgent('debug_agent', LLMConfig(name='s', model='openai/s', api_key='x'))\n"
            "print('litellm' in sys.modules)\n"
            "dgym_tui.llm.client._litellm()\n"  # the check itself can see an import
            "print('litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == ["False", "True"]


def test_known_model_gets_price_and_context_window_from_litellm(llm_server):
    """A model in litellm's local price map: real cost, and its context window
    is used for trimming even when llm.yaml gives none."""
    llm_server.script([{"content": "ok", "usage": {"prompt_tokens": 1000,
                                                   "completion_tokens": 100}}])
    llm = LLM(stub_config(llm_server, model="openai/gpt-4o"))
    assert llm.context_window == 128000
    response = llm.complete([SYSTEM, TASK])
    assert llm_server.requests[0]["model"] == "gpt-4o"
    assert 0.0 < response.usage.cost < 0.1
    assert LLM(stub_config(llm_server)).context_window is None  # unknown model


# -- malformed replies, timeouts, overflow wordings of local servers ----------

def test_empty_choices_and_malformed_replies_are_retried_llm_errors(llm_server):
    llm_server.script([{"body": {"id": "x", "object": "chat.completion", "choices": []}},
                       {"body": "<html>bad gateway</html>"},
                       {"body": {"choices": [{"index": 0, "message": None}]}},
                       {"content": "finally"}])
    delays = []
    llm = LLM(stub_config(llm_server), sleep=delays.append)
    assert llm.complete([SYSTEM, TASK]).content == "finally"
    assert len(delays) == 3
    llm_server.script([{"body": {"choices": []}}] * 2)
    with pytest.raises(MalformedResponse, match="after 2 attempts.*no choices"):
        LLM(stub_config(llm_server, retries=1)).complete([SYSTEM, TASK])


def test_request_timeout_is_retried_then_reported(llm_server):
    llm_server.script([{"delay": 3, "content": "too late"}, {"content": "in time"}])
    delays = []
    llm = LLM(stub_config(llm_server, timeout=0.5), sleep=delays.append)
    assert llm.complete([SYSTEM, TASK]).content == "in time"
    assert delays == [0.001]
    llm_server.script([{"delay": 3, "content": "too late"}])
    with pytest.raises(LLMError, match="(?i)after 1 attempts.*time"):
        LLM(stub_config(llm_server, timeout=0.5, retries=0)).complete([SYSTEM, TASK])


OVERFLOWS = {
    "llama-cpp-python": (400, "Requested tokens (9000) exceed context window of 8192"),
    "llama-cpp-python-500": (500, "Requested tokens (9000) exceed context window of 8192"),
    "llama.cpp-server": (400, "request (9000 tokens) exceeds the available context size "
                              "(8192 tokens), try increasing it"),
    "llama.cpp-server-old": (400, "the request exceeds the available context size. try "
                                  "increasing the context size or enable context shift"),
    "llama.cpp-server-500": (500, "Context size has been exceeded."),
    "vllm": (400, "This model's maximum context length is 8192 tokens. However, you requested "
                  "9000 tokens (8000 in the messages, 1000 in the completion). Please reduce "
                  "the length of the messages or completion."),
    "vllm-decoder": (400, "The decoder prompt (length 9000) is longer than the maximum model "
                          "length of 8192. Make sure that `max_model_len` is no smaller than "
                          "the number of text tokens."),
    "ollama": (400, "the input length exceeds the context length"),
}


@pytest.mark.parametrize("server", sorted(OVERFLOWS))
def test_each_overflow_wording_trims_and_retries(llm_server, server):
    status, message = OVERFLOWS[server]
    llm_server.script([{"status": status, "message": message}, {"content": "fits now"}])
    messages = [SYSTEM, TASK, *history(8, size=5)]
    delays = []
    assert LLM(stub_config(llm_server), sleep=delays.append).complete(messages).content == "fits now"
    first, second = (r["messages"] for r in llm_server.requests)
    assert len(first) == len(messages) and len(second) < len(first)
    assert second[:2] == [SYSTEM, TASK] and second[-1] == messages[-1]
    assert delays == []  # trimmed, not waited for like a server error


def test_overflow_wording_numbers():
    assert context_overflow(OVERFLOWS["llama-cpp-python"][1]) == (True, 8192, 9000)
    assert context_overflow(OVERFLOWS["llama.cpp-server"][1]) == (True, 8192, 9000)
    assert context_overflow(OVERFLOWS["vllm"][1]) == (True, 8192, 8000)
    assert context_overflow(OVERFLOWS["vllm-decoder"][1]) == (True, 8192, 9000)
    assert context_overflow('{"error": {"type": "exceed_context_size_error", '
                            '"n_prompt_tokens": 1407, "n_ctx": 256}}') == (True, 256, 1407)
    assert context_overflow(OVERFLOWS["ollama"][1]) == (True, None, None)
    assert context_overflow("bad things") == (False, None, None)
    assert context_overflow("rate limit exceeded") == (False, None, None)


def test_overflow_numbers_are_learned_and_trim_to_fit(llm_server):
    messages = [SYSTEM, TASK, *history(30, size=40)]
    llm = LLM(stub_config(llm_server, max_tokens=100))  # no context_window configured
    ours = llm.count_tokens(messages)
    window = ours // 2
    llm_server.script([{"status": 400, "message": f"Requested tokens ({int(ours * 1.25)}) exceed "
                                                  f"context window of {window}"},
                       {"content": "ok", "usage": {"prompt_tokens": 0}}])  # no count: keep it
    assert llm.complete(messages).content == "ok"
    assert llm.context_window == window
    assert llm.calibration == pytest.approx(1.25, abs=0.01)
    sent = llm_server.requests[1]["messages"]
    assert llm.count_tokens(sent) * 1.25 <= window - 100   # it fits the server's count
    assert llm.count_tokens(sent) * 1.25 > window * 0.6    # and not much more was dropped


def test_prompt_estimate_is_calibrated_from_usage(llm_server):
    messages = [SYSTEM, TASK, *history(20)]
    llm = LLM(stub_config(llm_server, context_window=3000, max_tokens=500))
    # the server counts far more tokens than our tokenizer: the next prompt is cut harder
    llm_server.script([{"content": "one", "usage": {"prompt_tokens": 4000}}, {"content": "two"}])
    first = llm.complete(messages)
    sent = llm_server.requests[0]["messages"]
    assert llm.calibration == pytest.approx(4000 / llm.count_tokens(sent))
    second = llm.complete(messages)
    resent = llm_server.requests[1]["messages"]
    assert second.trimmed > first.trimmed and len(resent) < len(sent)
    assert llm.count_tokens(resent) * 4000 / llm.count_tokens(sent) * 1.1 <= 2500
