#!/usr/bin/env bash
# Build the image of dgym-tui's offline SWE-bench instance (dgym__calc-1).
#
# The image is the sandbox image (scripts/setup_docker.sh) plus the fixture
# repository data/swebench/repos/dgym__calc at /testbed, committed with git at
# the instance's base_commit. No network is used. Skipped when the tag exists.
#
# Environment:
#   DGYM_TEST_IMAGE   base image (default dgym-tui/sandbox:test)
#   DGYM_REBUILD=1    rebuild even if the tag exists
#
# Usage: scripts/build_swebench_fixture.sh
set -euo pipefail
cd "$(dirname "$0")/.."
exec python -c '
import os, sys
from dgym_tui.benchmarks.swebench import build_fixture_image
print(build_fixture_image(force=os.environ.get("DGYM_REBUILD") == "1"))
'
