#!/usr/bin/env bash
# Build the images of dgym-tui's offline SWE-bench fixture instances
# (data/swebench/instances.jsonl) and R2E-Gym fixture records
# (data/r2egym/instances.jsonl: data/r2egym/repos/<task> at /testbed, with its
# run_tests.sh and r2e_tests, named as the record's docker_image).
#
# Each image is the sandbox image (scripts/setup_docker.sh) plus the fixture
# repository data/swebench/repos/<instance id> at /testbed, committed with git
# at the instance's base_commit, named like the harness's images in the
# dgym-fixture namespace. No network is used. An image built from the same
# repository content is kept.
#
# Environment:
#   DGYM_TEST_IMAGE   base image (default dgym-tui/sandbox:test)
#   DGYM_REBUILD=1    rebuild even when the images are up to date
#
# Usage: scripts/build_swebench_fixture.sh
set -euo pipefail
cd "$(dirname "$0")/.."
exec python -c '
import os
from dgym_tui.benchmarks import r2egym, swebench
force = os.environ.get("DGYM_REBUILD") == "1"
for module in (swebench, r2egym):
    for instance, image in module.build_fixture_images(force=force).items():
        print(instance, image)
'
