"""``dgym-tui --study``: the CLI refuses a bad study file or participant id in one line.

(Pilot tests of the study app's flow are not written yet.)"""

from __future__ import annotations

from dgym_tui.tui.cli import main


def test_cli_refuses_bad_study_and_participant(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("benchmark: mini\ntasks: [nosuch_task]\n")
    assert main(["--study", str(bad), "--participant", "P1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "nosuch_task" in err and len(err.splitlines()) == 1
    good = tmp_path / "good.yaml"
    good.write_text("benchmark: mini\ntasks: [bank_account]\n")
    assert main(["--study", str(good), "--participant", "a b"]) == 2
    assert "participant id" in capsys.readouterr().err
