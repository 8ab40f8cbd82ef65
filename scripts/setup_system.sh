#!/usr/bin/env bash
# Debian packages the test suite needs on a fresh machine (idempotent: only
# missing commands are installed). Root is needed for apt.
#
#   tmux        the app's terminal smoke test (tests drive it with send-keys)
#   bubblewrap  the `bwrap` terminal (sandboxed local episodes)
#   libseccomp2 its seccomp filter (loaded by the pyseccomp binding)
#   util-linux  setpriv and prlimit (the sandbox drops to its own uid, caps resources)
#   chromium    the app served in a browser, driven by playwright
set -euo pipefail

# command -> Debian package
declare -A PACKAGES=(
    [tmux]=tmux
    [bwrap]=bubblewrap
    [chromium]=chromium
    [setpriv]=util-linux
    [prlimit]=util-linux
)

missing=()
for cmd in "${!PACKAGES[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("${PACKAGES[$cmd]}")
done
# libraries (no command to look for)
ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || missing+=(libseccomp2)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "[setup_system] installing ${missing[*]}"
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    "${as_root[@]}" apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
else
    echo "[setup_system] system packages already installed"
fi
