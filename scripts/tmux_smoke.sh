#!/usr/bin/env bash
# Smoke test of the real dgym-tui app in a real terminal (tmux 160x48).
# Starts `dgym-tui --task TASK`, sends keys, checks the screen with capture-pane,
# quits with q and checks the exit code and the trajectory file.
# Usage: scripts/tmux_smoke.sh [TASK]   (default: bank_account). Exits non-zero on failure.
set -euo pipefail

TASK="${1:-bank_account}"
SESSION="dgym-smoke-$$"
WORK="$(mktemp -d)"
DGYM_TUI="${DGYM_TUI:-dgym-tui}"
TIMEOUT="${SMOKE_TIMEOUT:-120}"

# A private tmux server (-L): other tmux servers and their options cannot interfere.
tmux() { command tmux -L "$SESSION" -f /dev/null "$@"; }

cleanup() {
    tmux kill-server 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "tmux_smoke: FAIL: $*" >&2
    echo "----- screen -----" >&2
    tmux capture-pane -p -t "$SESSION" >&2 2>/dev/null || cat "$WORK/screen" >&2 2>/dev/null || true
    exit 1
}

# wait_for PATTERN [SECONDS]: poll the screen until grep -E finds PATTERN.
wait_for() {
    local pattern="$1" limit="${2:-$TIMEOUT}" waited=0
    while (( waited < limit * 5 )); do
        if tmux capture-pane -p -t "$SESSION" > "$WORK/screen" 2>/dev/null \
                && grep -Eq -- "$pattern" "$WORK/screen"; then
            return 0
        fi
        if [[ -f "$WORK/exit" ]]; then
            fail "the app exited early ($(cat "$WORK/exit")) while waiting for: $pattern"
        fi
        sleep 0.2
        waited=$((waited + 1))
    done
    fail "timed out after ${limit}s waiting for: $pattern"
}

keys() { tmux send-keys -t "$SESSION" "$@"; sleep 0.3; }

type -P tmux >/dev/null || { echo "tmux_smoke: tmux is not installed" >&2; exit 2; }

tmux new-session -d -s "$SESSION" -x 160 -y 48 \
    "cd '$WORK' && unset COLUMNS LINES && $DGYM_TUI --task '$TASK' --trajectory '$WORK/traj.jsonl' --no-apply-prompt; echo \"EXIT=\$?\" > '$WORK/exit'; sleep 60"

# First paint, then the initial eval: the status bar shows the failing tests.
wait_for "step 0/[0-9]+ │ human │ tests [0-9]+/[0-9]+"
# The source view already shows code (a .py file in its title, numbered lines).
grep -Eq "╭─ [^ ]+\.py ─" "$WORK/screen" || fail "no source file shown on start"
grep -Eq "│ *[0-9]+ │" "$WORK/screen" || fail "no numbered source lines"

# Key help.
keys "?"
wait_for "Keys — escape closes" 20
keys Escape

# pdb through the console: the answer shows up in the scroll-back.
keys ":"
keys "p 6*7" Enter
wait_for "^ *│?.*│42 " 60
wait_for "step 1/" 20
keys Escape

# Run the entrypoint with x.
keys "x"
wait_for "step 2/" 90

# Quit cleanly: exit code 0 and a trajectory with a footer.
keys "q"
for _ in $(seq 1 150); do [[ -f "$WORK/exit" ]] && break; sleep 0.2; done
[[ -f "$WORK/exit" ]] || fail "the app did not exit after q"
grep -q "EXIT=0" "$WORK/exit" || fail "exit code: $(cat "$WORK/exit")"
grep -q '"type": *"footer"' "$WORK/traj.jsonl" || fail "the trajectory has no footer"
[[ "$(grep -c '"type": *"step"' "$WORK/traj.jsonl")" == 2 ]] || fail "expected 2 steps in the trajectory"
echo "tmux_smoke: OK ($TASK)"
