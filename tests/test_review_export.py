"""Reviewed runs as data: dgym export --format preferences / sft --accepted-only, dgym apply."""

from __future__ import annotations

import json

import pytest
from run_folders import BUGGY, write_episode

from dgym_tui.cli.main import main
from dgym_tui.core.types import ApplyConflictError
from dgym_tui.runs.apply import apply_episode
from dgym_tui.runs.reviews import append_review


@pytest.fixture
def reviewed_run(tmp_path):
    run = tmp_path / "run"
    write_episode(run, "calc", episode="calc-a", resolved=True, steps=2)
    write_episode(run, "calc", episode="calc-b", resolved=False, steps=3)
    write_episode(run, "calc", episode="calc-c", resolved=True, steps=2)
    write_episode(run, "other", resolved=True)
    append_review(run, "calc-a", "accept", "clean fix")
    append_review(run, "calc-b", "reject", "multiplies")
    append_review(run, "calc-c", "needs-work")
    append_review(run, "other", "accept")
    return run


def test_preferences_pair_accepted_with_rejected_of_the_same_task(reviewed_run, tmp_path, capsys):
    out = tmp_path / "prefs.jsonl"
    assert main(["export", str(reviewed_run), "--format", "preferences", "-o", str(out)]) == 0
    assert "wrote 1 preference pair(s)" in capsys.readouterr().err
    (pair,) = [json.loads(line) for line in out.read_text().splitlines()]
    # the prompt is what both episodes share: the task and the identical first step
    assert [m["role"] for m in pair["prompt"]] == ["system", "user", "assistant", "tool"]
    assert pair["prompt"][1]["content"] == "task calc: the tests fail"
    assert pair["chosen"][0]["role"] == "assistant" and pair["rejected"][0]["role"] == "assistant"
    assert len(pair["chosen"]) == 2 and len(pair["rejected"]) == 4  # 2 and 3 steps
    meta = pair["meta"]
    assert (meta["task"], meta["chosen"]["episode"], meta["rejected"]["episode"]) == (
        "calc", "calc-a", "calc-b")
    assert "+    return a + b" in meta["chosen"]["patch"]
    assert "+    return a * b" in meta["rejected"]["patch"]
    assert meta["rejected"]["note"] == "multiplies"


def test_sft_accepted_only(reviewed_run, tmp_path, capsys):
    out = tmp_path / "sft.jsonl"
    assert main(["export", str(reviewed_run), "--format", "sft", "--accepted-only",
                 "-o", str(out)]) == 0
    tasks = [json.loads(line)["meta"]["task"] for line in out.read_text().splitlines()]
    assert tasks == ["calc", "other"]
    # a plain folder export skips reviews.jsonl instead of failing on it
    assert main(["export", str(reviewed_run), "--format", "sft", "-o", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 4
    empty = tmp_path / "empty"
    write_episode(empty, "x")
    assert main(["export", str(empty), "--format", "sft", "--accepted-only"]) == 2
    assert "no accepted episode" in capsys.readouterr().err


def test_apply_writes_merges_or_refuses(reviewed_run, tmp_path, capsys):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "calc.py").write_text(BUGGY)
    assert main(["apply", str(reviewed_run / "calc-a"), str(checkout)]) == 0
    assert (checkout / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert "applied to" in capsys.readouterr().out

    # the checkout changed elsewhere since the episode's start: merged three-way
    (checkout / "calc.py").write_text("# header\n\n" + BUGGY)
    assert apply_episode(reviewed_run / "calc-a", checkout) == ["calc.py"]
    assert (checkout / "calc.py").read_text() == "# header\n\ndef add(a, b):\n    return a + b\n"

    # the same line changed differently: nothing written, the command says why
    before = "def add(a, b):\n    return b + a - 0\n"
    (checkout / "calc.py").write_text(before)
    with pytest.raises(ApplyConflictError):
        apply_episode(reviewed_run / "calc-b", checkout)
    assert main(["apply", str(reviewed_run / "calc-b"), str(checkout)]) == 2
    assert "not applied: calc.py" in capsys.readouterr().err
    assert (checkout / "calc.py").read_text() == before


def test_apply_never_writes_outside_the_checkout(tmp_path, capsys):
    run = tmp_path / "run"
    folder = write_episode(run, "evil")
    (folder / "patch.diff").write_text(
        "--- a/../outside.py\n+++ b/../outside.py\n@@ -0,0 +1 @@\n+pwned\n")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    assert main(["apply", str(folder), str(checkout)]) == 2
    assert "inside the checkout" in capsys.readouterr().err
    assert not (tmp_path / "outside.py").exists()
    # a link in the checkout that leads out is not followed
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "calc.py").write_text(BUGGY)
    (checkout / "sub").symlink_to(outside)
    (folder / "patch.diff").write_text(
        "--- a/sub/calc.py\n+++ b/sub/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
        "-    return a - b\n+    return a + b\n")
    assert main(["apply", str(folder), str(checkout)]) == 2
    assert (outside / "calc.py").read_text() == BUGGY
