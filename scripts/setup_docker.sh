#!/usr/bin/env bash
# Prepare Docker for dgym-tui: engine installed and running, sandbox image built.
#
# Idempotent: every step is skipped when already done, so a second run takes a
# few seconds. Used by CI (fresh Debian bookworm, root, no engine, no image)
# and by developers.
#
# The sandbox image is built from Debian packages with debootstrap (no image
# registry is needed) and imported with `docker import`. It holds python3,
# pytest, git and a `python` command.
#
# Environment:
#   DGYM_TEST_IMAGE   image tag to build (default dgym-tui/sandbox:test)
#   DGYM_DOCKERD_LOG  dockerd log file when this script starts it
#                     (default /tmp/dgym-dockerd.log)
#   DGYM_DOCKERD_WAIT seconds to wait for the daemon (default 60)
#   DGYM_REBUILD=1    rebuild the image even if the tag exists
#
# Usage: sudo scripts/setup_docker.sh      (root is needed for apt, dockerd
#        and debootstrap; steps already done need no root)
set -euo pipefail

IMAGE="${DGYM_TEST_IMAGE:-dgym-tui/sandbox:test}"
DOCKERD_LOG="${DGYM_DOCKERD_LOG:-/tmp/dgym-dockerd.log}"
WAIT="${DGYM_DOCKERD_WAIT:-60}"
SUITE="bookworm"
PACKAGES="python3,python3-pytest,python-is-python3,git"

export PATH="$PATH:/usr/sbin:/sbin"   # dockerd and debootstrap live in sbin

say() { printf '[setup_docker] %s\n' "$*"; }
die() { printf '[setup_docker] ERROR: %s\n' "$*" >&2; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@";
    elif command -v sudo >/dev/null 2>&1; then sudo "$@";
    else die "need root for: $* (run this script as root)"; fi
}

# 1. Packages: the engine (Debian's docker.io) and debootstrap.
missing=()
if ! command -v docker >/dev/null 2>&1 || ! command -v dockerd >/dev/null 2>&1; then
    missing+=(docker.io)
fi
if ! command -v debootstrap >/dev/null 2>&1 && [ ! -x /usr/sbin/debootstrap ]; then
    missing+=(debootstrap)
fi
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
else
    say "docker and debootstrap already installed"
fi

# 2. The daemon: start it in the background when `docker info` fails.
if info_err="$(docker info 2>&1 >/dev/null)"; then
    say "docker daemon already running"
elif [[ "$info_err" == *"permission denied"* ]]; then
    die "no permission to use the Docker daemon: run as root or add your user to the docker group"
else
    say "starting dockerd (log: $DOCKERD_LOG)"
    dockerd_pid="$(as_root sh -c "nohup dockerd >'$DOCKERD_LOG' 2>&1 & echo \$!")"
    waited=0
    until docker info >/dev/null 2>&1; do
        if ! as_root kill -0 "$dockerd_pid" 2>/dev/null; then
            tail -n 20 "$DOCKERD_LOG" >&2 || true
            die "dockerd exited at start; see $DOCKERD_LOG"
        fi
        if [ "$waited" -ge "$WAIT" ]; then
            tail -n 20 "$DOCKERD_LOG" >&2 || true
            die "dockerd did not answer within ${WAIT}s; see $DOCKERD_LOG"
        fi
        sleep 1
        waited=$((waited + 1))
    done
    say "dockerd ready after ${waited}s"
fi

# 3. The sandbox image, built only when the tag is missing (cached by tag).
if [ "${DGYM_REBUILD:-0}" != "1" ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    say "image $IMAGE already exists"
else
    rootfs="$(mktemp -d /tmp/dgym-rootfs.XXXXXX)"
    trap 'as_root rm -rf "$rootfs"' EXIT
    say "debootstrap $SUITE into $rootfs (about a minute)"
    start=$(date +%s)
    as_root debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" \
        >"$rootfs.log" 2>&1 || { tail -n 30 "$rootfs.log" >&2; die "debootstrap failed; full log: $rootfs.log"; }
    # Smaller image: package caches and lists are not needed at run time.
    as_root rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    say "importing as $IMAGE"
    as_root tar -C "$rootfs" -c . | docker import \
        -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        -c 'ENV LANG=C.UTF-8' \
        -c 'WORKDIR /workspace' \
        -c 'CMD ["/bin/bash"]' \
        - "$IMAGE" >/dev/null
    rm -f "$rootfs.log"
    say "image built in $(( $(date +%s) - start ))s"
fi

# 4. Check: the image runs python and pytest.
version="$(docker run --rm --network none "$IMAGE" python3 -m pytest --version 2>&1)" \
    || die "image $IMAGE does not run pytest: $version"
say "ok: $IMAGE ($version)"
