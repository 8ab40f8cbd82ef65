"""Bad input a user can give: one line on stderr, a non-zero exit, no traceback (issue 8)."""

from __future__ import annotations

import pytest

from dgym_tui.cli.main import main as dgym
from dgym_tui.core.terminals import bwrap


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_play_on_a_file_says_it_is_a_file(tmp_path, capsys):
    afile = tmp_path / "app.py"
    afile.write_text("x = 1\n")
    assert dgym(["play", str(afile)]) == 2
    assert "is a file, not a folder" in _one_line(capsys.readouterr().err)


def test_llm_yaml_values_are_checked_when_loaded(tmp_path, capsys):
    from dgym_tui.llm.client import LLMConfigError, load_llm_configs

    llm_yaml = tmp_path / "llm.yaml"
    llm_yaml.write_text("m:\n  model: openai/x\n  temperature: hot\n")
    with pytest.raises(LLMConfigError, match="temperature must be a number, not 'hot'"):
        load_llm_configs(llm_yaml)
    for bad, expected in (("retries: 2.5", "retries must be a whole number"),
                          ("max_tokens: true", "max_tokens must be a whole number"),
                          ("extra: [1]", "extra must be a mapping")):
        llm_yaml.write_text(f"m:\n  model: openai/x\n  {bad}\n")
        with pytest.raises(LLMConfigError, match=expected):
            load_llm_configs(llm_yaml)
    llm_yaml.write_text("m:\n  model: openai/x\n  temperature: 1\n  max_tokens: null\n")
    assert load_llm_configs(llm_yaml)["m"].temperature == 1
    # Through `dgym run`: stopped before the first task, in one line.
    llm_yaml.write_text("m:\n  model: openai/x\n  temperature: hot\n")
    config = tmp_path / "run.yaml"
    config.write_text(f"benchmark: mini\ntasks: [bank_account]\npolicy: agent\nllm: m\n"
                      f"llm_config: {llm_yaml}\n")
    assert dgym(["run", str(config), "--no-progress", "--output", str(tmp_path / "out")]) == 2
    assert "temperature must be a number" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "out" / "bank_account").exists()


def test_nul_byte_in_a_tool_path_is_one_line(make_repo, make_env):
    from dgym_tui import ToolCall

    env = make_env(make_repo({"a.py": "x = 1\n"}), entrypoint="true")
    env.reset()
    for name, args in (("view", {"path": "a\x00.py"}), ("listdir", {"path": "a\x00"}),
                       ("rewrite", {"path": "a\x00.py", "start": 1, "end": 1, "new_code": ""})):
        r = env.step(ToolCall(name, args))
        assert r.error and "NUL byte" in r.observation and "\n" not in r.observation.strip()


@pytest.mark.docker
def test_docker_terminal_without_image_uses_the_sandbox_image(docker_ready, tmp_path, capsys):
    """`-p terminal=docker` without an image: the sandbox image, not 'needs an image'."""
    out = tmp_path / "out"
    assert dgym(["run", "mini_solution", "-p", "tasks=[bank_account]", "-p", "terminal=docker",
                 "--no-progress", "--output", str(out)]) == 0
    assert "needs an image" not in capsys.readouterr().err
    import json

    [task] = json.loads((out / "summary.json").read_text())
    assert task["resolved"] is True and task["error"] == ""


def test_dgym_tui_path_defaults_to_bwrap_or_says_why_not(tmp_path, capsys, monkeypatch):
    from dgym_tui.cli.tui import build_app, build_parser

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_a.py").write_text("def test_a():\n    pass\n")

    def terminal_of(*extra: str) -> str:
        app = build_app(build_parser().parse_args([str(repo), "--trajectory",
                                                   str(tmp_path / "t.jsonl"), *extra]))
        try:
            return app.session.env.terminal_spec
        finally:
            app.close_session()

    assert terminal_of() == ("bwrap" if bwrap.bwrap_problem() is None else "local")
    monkeypatch.setattr(bwrap, "bwrap_problem", lambda: "bubblewrap is not installed")
    capsys.readouterr()
    assert terminal_of() == "local"
    notice = _one_line(capsys.readouterr().err)
    assert "no sandbox: bubblewrap is not installed" in notice and "--terminal" in notice
    assert terminal_of("--terminal", "local") == "local" and capsys.readouterr().err == ""
