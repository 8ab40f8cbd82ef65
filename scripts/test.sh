#!/usr/bin/env bash
# Install everything the test suite needs on a fresh machine, then run it.
# Used by developers and by CI (.ci/run). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup_system.sh          # Debian packages: tmux, bubblewrap, chromium
python3 -m pip install -q --disable-pip-version-check -e '.[dev]'
bash scripts/setup_docker.sh          # docker.io, dockerd, the sandbox image (cached by tag)
python3 -m pytest -ra "$@"
