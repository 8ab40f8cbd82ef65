"""The headless human policy: parsing typed lines, and a real episode driven by it."""

from __future__ import annotations

import pytest

from dgym_tui.episode.policy import Policy
from dgym_tui.episode.records import EpisodeInfo
from dgym_tui.policies.console_syntax import parse_action
from dgym_tui.policies.human import HumanTextPolicy

TOOLS = ["listdir", "view", "eval", "pdb", "rewrite", "grep", "submit"]
SCHEMAS = {
    "view": {"type": "object", "required": ["path"],
             "properties": {"path": {"type": "string"}, "start": {"type": "integer"}}},
    "rewrite": {"type": "object", "required": ["path", "new_code"],
                "properties": {"path": {"type": "string"}, "start": {"type": ["integer", "null"]},
                               "end": {"type": ["integer", "null"]},
                               "new_code": {"type": "string"}}},
    "pdb": {"type": "object", "required": ["command"],
            "properties": {"command": {"type": "string"}}},
}


@pytest.mark.parametrize("line, name, arguments", [
    ("view path=cart.py start=3", "view", {"path": "cart.py", "start": 3}),
    ("view cart.py", "view", {"path": "cart.py"}),
    ("view path=12", "view", {"path": "12"}),  # string parameter stays text
    ('grep pattern="def total"', "grep", {"pattern": "def total"}),
    ("""rewrite cart.py start=2 end=2 new_code='"    return sum(items)\\n"'""", "rewrite",
     {"path": "cart.py", "start": 2, "end": 2, "new_code": "    return sum(items)\n"}),
    ('view {"path": "a b.py", "start": 1}', "view", {"path": "a b.py", "start": 1}),
    ("eval", "eval", {}),
    ("b cart.py:3", "pdb", {"command": "b cart.py:3"}),
    ("  p total + 1 ", "pdb", {"command": "p total + 1"}),
    ("!x = 'it''s'", "pdb", {"command": "!x = 'it''s'"}),
    ('pdb command="view = 3"', "pdb", {"command": "view = 3"}),
])
def test_parse_action(line, name, arguments):
    call = parse_action(line, TOOLS, SCHEMAS)
    assert (call.name, call.arguments) == (name, arguments)
    assert call.id.startswith("call_")


@pytest.mark.parametrize("line, message", [
    ("   ", "empty line"),
    ("view path='unclosed", "quotation"),
    ("view a.py b.py", "expected key=value, got 'b.py'"),
    ("view path=a.py path=b.py", "given twice"),
    ("view {not json}", "not valid JSON"),
    ("eval now", r"expected key=value, got .now. \(arguments: none\)"),
])
def test_parse_action_errors(line, message):
    with pytest.raises(ValueError, match=message) as info:
        parse_action(line, TOOLS, SCHEMAS)
    assert "\n" not in str(info.value)


def test_without_pdb_a_bare_command_is_an_unknown_tool():
    with pytest.raises(ValueError, match="unknown tool 'n'; tools: view, eval"):
        parse_action("n", ["view", "eval"])
    # without schemas a bare value cannot be placed
    with pytest.raises(ValueError, match="expected key=value"):
        parse_action("view a.py", ["view"])


def test_policy_reads_until_a_line_parses():
    lines = iter(["", "view", "view a.py b.py", "view path=a.py"])
    prompts, shown = [], []

    def read(prompt):
        prompts.append(prompt)
        return next(lines)

    policy = HumanTextPolicy(read=read, write=shown.append)
    assert isinstance(policy, Policy) and policy.actor == "human"
    policy.reset(EpisodeInfo(task="t", instructions="", initial_observation="o",
                             tool_schemas=[{"type": "function", "function": {
                                 "name": n, "parameters": SCHEMAS.get(n, {})}} for n in TOOLS]))
    proposal = policy.propose([])
    assert (proposal.action.name, proposal.action.arguments) == ("view", {"path": "a.py"})
    assert proposal.error is None
    assert prompts == ["dgym> "] * 4
    assert shown == ["error: view: missing path (e.g. `view path=...`)",
                     "error: view: expected key=value, got 'b.py' (arguments: path, start)"]


def test_policy_end_of_input():
    def read(_prompt):
        raise EOFError

    with pytest.raises(EOFError):
        HumanTextPolicy(read=read, write=lambda _: None).propose([])


def test_typed_lines_drive_a_real_episode(make_repo, make_env, fast_pytest, tmp_path):
    from dgym_tui.episode.session import Session
    from dgym_tui.episode.trajectory import read_trajectory

    repo = make_repo({
        "cart.py": "def total(items):\n    return sum(items) - 1\n",
        "test_cart.py": "from cart import total\n\ndef test_total():\n"
                        "    assert total([1, 2]) == 3\n",
    })
    env = make_env(repo, entrypoint=f"{fast_pytest} test_cart.py",
                   tools=("view", "rewrite", "eval", "submit"))
    lines = iter(["view cart.py",
                  "rewrite cart.py bogus",  # refused by the parser, asked again
                  """rewrite cart.py start=2 end=2 new_code='"    return sum(items)\\n"'""",
                  "eval", "submit"])
    shown = []
    policy = HumanTextPolicy(read=lambda _p: next(lines), write=shown.append)
    path = tmp_path / "human.jsonl"
    session = Session(env, policy=policy, mode="auto", max_steps=10, trajectory_path=path)
    session.start()
    session.run()
    assert session.done
    assert [t.action.name for t in session.turns] == ["view", "rewrite", "eval", "submit"]
    assert all((t.actor, t.decision) == ("human", "manual") for t in session.turns)
    assert "return sum(items) - 1" in session.turns[0].result.observation
    assert session.turns[2].result.resolved
    assert len(shown) == 1 and "bogus" in shown[0]
    assert (repo / "cart.py").read_text().endswith("- 1\n")  # the original is untouched
    assert "return sum(items)\n" in env.patch()
    records = read_trajectory(path)
    assert records is not None
