#!/usr/bin/env bash
# Install everything the test suite needs on a fresh machine, then run it.
# Used by developers and by CI (.ci/run). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v tmux >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux
fi
python3 -m pip install -q --disable-pip-version-check -e '.[dev]'
bash scripts/setup_docker.sh          # docker.io, dockerd, the sandbox image (cached by tag)
python3 -m pytest -ra "$@"
