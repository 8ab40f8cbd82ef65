#!/usr/bin/env bash
# Install everything the test suite needs on a fresh machine, then run it.
# Used by developers and by CI (.ci/run). Extra arguments go to pytest.
#
# The suite runs in a virtualenv of its own (default .venv; DGYM_VENV to
# choose another), installed with the pins of constraints.txt, so what the
# tests see does not depend on the packages of the machine's own Python.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${DGYM_VENV:-.venv}"

bash scripts/setup_system.sh          # Debian packages: tmux, bubblewrap, chromium
if [ ! -x "$VENV/bin/python" ]; then
    echo "[test] creating the virtualenv $VENV"
    python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"
python -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev]'
bash scripts/setup_docker.sh          # docker.io, dockerd, the sandbox image (cached by tag)
python -m pytest -ra "$@"
