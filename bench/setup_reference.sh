#!/usr/bin/env bash
# Install the reference system (debug-gym 1.3.0) into its own Python 3.12
# virtualenv for side-by-side benchmarks. Without the sglang pin its install
# fails on these machines. Usage: bash bench/setup_reference.sh [VENV_DIR]
set -euo pipefail
venv=${1:-/opt/ref-debug-gym}
py=$(pyenv root 2>/dev/null)/versions/3.12.1/bin/python3.12
[ -x "$py" ] || py=$(command -v python3.12) || { echo "needs Python 3.12 (pyenv install 3.12)"; exit 2; }
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/pip" install -q debug-gym==1.3.0 sglang==0.5.2
echo "reference system ready: $venv/bin/python"
