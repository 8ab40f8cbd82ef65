"""Tool-call parsing against the corpus of model replies in tests/data/llm_replies/.

Each corpus line is one reply (``content`` and native ``tool_calls`` as a
server sent them) with what must be read from it. The parser is checked on
its own, then every reply goes through the real client path (HTTP stub ->
litellm -> LLMAgent) in the mode it was written for.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dgym_tui.episode.records import EpisodeInfo
from dgym_tui.llm.client import LLM, LLMConfig
from dgym_tui.llm.tool_calls import FORMS, parse_reply, parse_text
from dgym_tui.policies.agent import LLMAgent, example_call

CORPUS_DIR = Path(__file__).parent / "data" / "llm_replies"


def schema(name: str, **properties: str) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": f"The {name} tool.",
        "parameters": {"type": "object", "properties": {k: {"type": t} for k, t in properties.items()},
                       "required": list(properties)}}}


SCHEMAS = [schema("listdir"), schema("view", path="string"), schema("grep", pattern="string"),
           schema("eval"), schema("pdb", command="string"),
           schema("rewrite", path="string", start="integer", end="integer", new_code="string"),
           schema("submit")]
TOOLS = [s["function"]["name"] for s in SCHEMAS]
INFO = EpisodeInfo(task="Make test_cart.py pass.", instructions="", tool_schemas=SCHEMAS,
                   initial_observation="1 failed")


def corpus() -> list[dict]:
    rows = []
    for file in sorted(CORPUS_DIR.glob("*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows


ROWS = corpus()


def normalized(arguments):
    return json.loads(arguments) if isinstance(arguments, str) else arguments


PROVENANCE = {"package", "model", "quantisation", "server", "settings", "task", "step", "date"}


def test_corpus_is_there_and_says_where_it_came_from():
    assert len(ROWS) >= 25
    assert len({row["id"] for row in ROWS}) == len(ROWS)
    for row in ROWS:
        assert row["source"] and row["mode"] in ("native", "text")
        # labelled by eye (tests/test_local_model.py captures replies without a label)
        assert "calls" in row.get("expect", {}), f"{row['id']}: no expect label"
    assert (CORPUS_DIR / "README.md").is_file()


def test_corpus_holds_replies_captured_from_a_real_model_in_both_modes():
    captured = [row for row in ROWS if "captured" in row]
    assert {row["mode"] for row in captured} == {"native", "text"}
    for row in captured:
        assert PROVENANCE <= set(row["captured"]), row["id"]
        assert row["source"].startswith("captured live")


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_parser_reads_corpus_reply(row):
    expect = row["expect"]
    parsed = parse_reply(row["content"], row["tool_calls"], known_tools=TOOLS,
                         native=row["mode"] == "native")
    assert [{"name": c.name, "arguments": normalized(c.arguments)} for c in parsed.calls] == \
        expect["calls"]
    if expect["calls"]:
        assert parsed.form == expect["form"] and parsed.form in FORMS
        assert parsed.error is None
        assert parsed.recovered == (row["mode"] == "native" and parsed.form != "native")
    else:
        assert not parsed.recovered
    if "reasoning" in expect:
        assert parsed.reasoning == expect["reasoning"]


@pytest.mark.parametrize("mode", ["native", "text"])
def test_corpus_through_the_agent(llm_server, mode):
    """Every reply with one well-formed call of a known tool becomes an action, in
    both modes; every other reply becomes an error the correction message explains."""
    llm = LLM(LLMConfig(name="stub", model="openai/stub", api_base=llm_server.url, api_key="x",
                        retry_base_delay=0.001))
    agent = LLMAgent("debug_agent", llm, tool_calling=mode)
    agent.reset(INFO)
    for row in ROWS:
        item = {"content": row["content"]}
        if row["tool_calls"]:
            item["tool_calls"] = [{"id": c["id"], "name": c["function"]["name"],
                                   "arguments": c["function"]["arguments"]}
                                  for c in row["tool_calls"]]
        llm_server.script([item])
    actions = 0
    for row in ROWS:
        expect = row["expect"]
        proposal = agent.propose([])
        assert proposal.raw["content"] == row["content"]  # the raw reply is always kept
        # several calls: the first runs and the model is told the others did not
        one_call = len(expect["calls"]) >= 1 and "tool calls" in expect.get("error", "tool calls")
        if one_call:
            actions += 1
            assert proposal.error is None, row["id"]
            assert ("notes" in proposal.raw["parse"]) == (len(expect["calls"]) > 1)
            assert (proposal.action.name, proposal.action.arguments) == (
                expect["calls"][0]["name"], expect["calls"][0]["arguments"])
            assert {k: proposal.raw["parse"][k] for k in ("form", "recovered")} == {
                "form": expect["form"],
                "recovered": mode == "native" and expect["form"] != "native"}
        else:
            assert proposal.action is None, row["id"]
            assert expect.get("error", "no tool call") in proposal.error, row["id"]
            # ... and the model is answered with the correction that shows the format
            correction = agent.correction(proposal.error, [])
            assert correction.startswith(f"Your last reply could not be run: {proposal.error}")
            assert '```tool_call\n{"name": "view", "arguments": {"path": "<path>"}}\n```' \
                in correction
    assert actions == sum(1 for r in ROWS if len(r["expect"]["calls"]) >= 1
                          and "tool calls" in r["expect"].get("error", "tool calls"))


def test_first_form_wins_and_reasoning_is_the_rest():
    reply = ('Plan: run the tests.\n<tool_call>\n{"name": "eval", "arguments": {}}\n</tool_call>\n'
             'Alternatively {"name": "view", "arguments": {"path": "a.py"}}')
    parsed = parse_text(reply, TOOLS)
    assert [c.name for c in parsed.calls] == ["eval"] and parsed.form == "tool_call_tag"
    assert parsed.reasoning.startswith("Plan: run the tests.")
    assert "<tool_call>" not in parsed.reasoning


def test_openai_shape_and_list_of_calls():
    shaped = parse_text('```json\n{"type": "function", "function": {"name": "view", '
                        '"arguments": {"path": "a.py"}}}\n```', TOOLS)
    assert [(c.name, c.arguments) for c in shaped.calls] == [("view", {"path": "a.py"})]
    listed = parse_text('[{"name": "eval", "arguments": {}}, {"name": "submit", "arguments": {}}]',
                        TOOLS)
    assert [c.name for c in listed.calls] == ["eval", "submit"]


def test_bare_name_only_object_counts_only_for_known_tools():
    assert [c.name for c in parse_text('{"name": "submit"}', TOOLS).calls] == ["submit"]
    assert parse_text('{"name": "Alice"}', TOOLS).calls == []
    # in a tool_call block any name is a call (validation says it is unknown)
    assert [c.name for c in parse_text('```tool_call\n{"name": "Alice"}\n```').calls] == ["Alice"]
    assert "must be a JSON object" in parse_text("```tool_call\n[1, 2]\n```").error


def test_example_call_uses_a_real_tool_with_typed_placeholders():
    call = example_call(SCHEMAS)
    assert (call.name, call.arguments) == ("view", {"path": "<path>"})
    rewrite_first = example_call([SCHEMAS[5], SCHEMAS[0]])
    assert rewrite_first.arguments == {"path": "<path>", "start": 1, "end": 1,
                                       "new_code": "<new_code>"}
    assert example_call([SCHEMAS[3]]).arguments == {}
    assert example_call([]) is None
