#!/usr/bin/env bash
# Drive the real dgym-tui app in a real terminal (tmux 160x48) as a person debugging would,
# checking the screen with capture-pane after every key:
#   the task's description in view at start; key help; a pdb command in the console; a live
#   resize to 80x24 (side columns hidden, source and console kept, the console's newest
#   line in view) and back; `:9` then `b` (breakpoint) and `c` (continue);
#   `s` into a call: the variables pane shows the local `number` = 2; a click in the stack
#   pane selects the caller (pdb `u 1`), `d` goes back; `/` search; `E` edits line 41 (the
#   fix) while pdb is stopped (the stale ▶ goes); an edit of the ORIGINAL file made
#   outside the session; `x` (tests pass); `w` applies: the fix and the outside edit are
#   both in the original afterwards (merged), or the apply is refused and the outside edit
#   is untouched (never lost); `q`; then `dgym-tui --replay` shows the recorded code (the
#   bug) before the rewrite step although the original now holds the fix, and the fix
#   after it.
# The repository is a copy of data/mini/pagination (a floor division drops the last page).
# Usage: scripts/tmux_smoke.sh   (DGYM_TUI: the command, default dgym-tui). Exits non-zero
# on failure, printing the screen.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SESSION="dgym-smoke-$$"
WORK="$(mktemp -d)"
REPO="$WORK/repo"
DGYM_TUI="${DGYM_TUI:-dgym-tui}"
TIMEOUT="${SMOKE_TIMEOUT:-120}"
SIDE_COLUMN=107  # the side column (Debug tab) starts here at 160 columns

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

# wait_for PATTERN [SECONDS] [COLUMN]: poll the screen (from COLUMN on, default 1) until
# grep -E finds PATTERN.
wait_for() {
    local pattern="$1" limit="${2:-$TIMEOUT}" column="${3:-1}" waited=0
    while (( waited < limit * 5 )); do
        if tmux capture-pane -p -t "$SESSION" > "$WORK/screen" 2>/dev/null \
                && cut -c "$column"- "$WORK/screen" | grep -Eq -- "$pattern"; then
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
text() { tmux send-keys -t "$SESSION" -l "$1"; sleep 0.3; }

# step N: wait until the status bar counts N steps.
step() { wait_for "│ step $1/[0-9]+ │" "${2:-$TIMEOUT}"; }

# Textual moves the key focus after the key that asks for it, so a key sent right after
# ":" can still reach the old widget: wait for the footer that goes with the focus.
SOURCE_FOOTER="^ b Breakpoint "
CONSOLE_FOOTER="^ esc Back to source "

focus_source() {
    keys Escape
    wait_for "$SOURCE_FOOTER" 30
}

# console LINE [FOOTER] [KEY]: open the console with KEY from the source view (default
# `:`, which starts the line with ":"; `/` starts a search), type LINE, enter, and wait
# until it was taken (the input shows its placeholder again) and the footer is FOOTER (the
# focus: the console after a command, the source view after :N or /text).
console() {
    focus_source
    keys "${3:-:}"
    wait_for "$CONSOLE_FOOTER" 30
    text "$1"
    keys Enter
    wait_for "▊  p x, n, b f.py:3" 30
    wait_for "${2:-$CONSOLE_FOOTER}" 30
}

# click TEXT: a real mouse click (SGR mouse report, as a terminal sends it) on the first
# place the side column shows TEXT.
click() {
    tmux capture-pane -p -t "$SESSION" > "$WORK/screen"
    local row col
    row="$(grep -n -- "$1" "$WORK/screen" | head -1 | cut -d: -f1)"
    [[ -n "$row" ]] || fail "nothing to click: $1"
    col="$(sed -n "${row}p" "$WORK/screen" | awk -v t="$1" '{ print index($0, t) }')"
    text $'\e[<0;'"$col;$row"'M'
    text $'\e[<0;'"$col;$row"'m'
}

type -P tmux >/dev/null || { echo "tmux_smoke: tmux is not installed" >&2; exit 2; }

cp -r "$HERE/../data/mini/pagination" "$REPO"
BUGGY='        return max(1, len(self.items) // self.per_page)'
FIXED='        return max(1, -(-len(self.items) // self.per_page))'
OUTSIDE='# a note written in an editor while the session ran'
grep -qxF -- "$BUGGY" "$REPO/paging.py" || fail "the task's bug line is not in paging.py"

start_app() {  # start_app ARGS...: run dgym-tui ARGS in the tmux session
    rm -f "$WORK/exit"
    tmux new-session -d -s "$SESSION" -x 160 -y 48 \
        "cd '$WORK' && unset COLUMNS LINES && $DGYM_TUI $* ; echo \"EXIT=\$?\" > '$WORK/exit'; sleep 60"
}

quit_app() {
    keys "q"
    for _ in $(seq 1 300); do [[ -f "$WORK/exit" ]] && break; sleep 0.2; done
    [[ -f "$WORK/exit" ]] || fail "the app did not exit after q"
    grep -q "EXIT=0" "$WORK/exit" || fail "exit code: $(cat "$WORK/exit")"
    tmux kill-session -t "$SESSION"
}

start_app "'$REPO' --trajectory '$WORK/traj.jsonl' --no-apply-prompt"

# First paint, then the initial eval: the status bar shows the failing tests.
wait_for "step 0/[0-9]+ │ human │ tests 3/5"
grep -Eq "╭─ test_pagination\.py ─" "$WORK/screen" || fail "the failing test is not shown on start"
grep -Eq "│ *[0-9]+ │" "$WORK/screen" || fail "no numbered source lines"
wait_for "│Task: +" 10  # the task's description is in view at start

# Key help.
keys "?"
wait_for "Keys — escape closes" 20
keys Escape

# pdb through the console: the answer shows up in the scroll-back.
console "p 6*7"
wait_for "^ *│?.*│42 " 60
step 1

# A live resize to 80x24: the tree and the side column go, the source keeps numbered lines,
# the console still shows its newest line (pdb's 42); then back to 160x48.
tmux resize-window -t "$SESSION" -x 80 -y 24
wait_for "^│ +[0-9]+ │" 30
wait_for "^42 *$" 30
tmux resize-window -t "$SESSION" -x 160 -y 48
wait_for "Debug  Transcript  Diff" 30
wait_for "^ *│?.*│42 " 30

# b at line 9 (`assert paginator.page(2)...`), then c: the frame arrow stands there.
console "9" "$SOURCE_FOOTER"
keys "b"
wait_for "│●  9 │    assert paginator.page\(2\)"
step 2
keys "c"
wait_for "│●▶ 9 │"
step 3

# s into page(2): paging.py, and the variables pane shows the argument number = 2.
keys "s"
wait_for "╭─ paging\.py ─"
step 4
wait_for "[│ ]number = 2 *$" 30 $SIDE_COLUMN

# The stack pane: a click on the caller selects it (pdb `u 1`): source and arrow follow.
wait_for "test_exact_pages +test_pagination\.py:9" 30 $SIDE_COLUMN
click "test_exact_pages"
wait_for "▶ test_exact_pages" 60 $SIDE_COLUMN
wait_for "╭─ test_pagination\.py ─"
step 5
grep -q 'pdb(command="u 1")' "$WORK/screen" || fail "the stack click did not run u 1"
focus_source
keys "d"  # back down into page()
wait_for "╭─ paging\.py ─"
step 6

# A search: / page_of puts the cursor on line 59 and scrolls it into view.
console "def page_of" "$SOURCE_FOOTER" /
wait_for "│ *59 │    def page_of"

# An edit: line 41 in the editor, the fix typed over it (ctrl+k clears the line), ctrl+s
# rewrites: the source view shows the new line 41 (and nothing of the old one after it).
console "41" "$SOURCE_FOOTER"
keys "E"
wait_for "Edit paging\.py, line 41" 20
sleep 2  # the editor takes the focus once it is mounted
keys C-k
text "$FIXED"
wait_for "return max\(1, -\(-len\(self\.items\)" 20
keys C-s
step 7
wait_for " 41 │        return max\(1, -\(-len\(self\.items\) // self\.per_page\)\) +│"
# pdb stood on the old code: the ▶ is gone and the console says pdb restarts.
wait_for "the code changed: pdb restarts at your next pdb command" 20
grep -q "▶" <(cut -c 30-106 "$WORK/screen" | head -34) && fail "a stale ▶ after the edit"

# Meanwhile the person edits the ORIGINAL file elsewhere (not the line the session fixed).
echo "$OUTSIDE" >> "$REPO/paging.py"

# x: the tests pass now.
focus_source
keys "x"
wait_for "tests 5/5" 180
step 8

# w: apply to the original, asked first. Merged (both edits kept) or refused (nothing lost).
keys "w"
wait_for "Apply the patch to the original repository" 20
keys "y"
wait_for "patch (not )?applied to" 60
grep -qxF -- "$OUTSIDE" "$REPO/paging.py" || fail "the outside edit was lost by w"
if grep -q "patch applied to" "$WORK/screen"; then
    grep -qxF -- "$FIXED" "$REPO/paging.py" || fail "w said applied, but the fix is not there"
    APPLY=merged
else
    grep -qxF -- "$BUGGY" "$REPO/paging.py" || fail "a refused w changed the original"
    APPLY=refused
fi

# Quit cleanly: exit code 0 and a trajectory with a footer and the 8 steps.
quit_app
grep -q '"type": *"footer"' "$WORK/traj.jsonl" || fail "the trajectory has no footer"
[[ "$(grep -c '"type": *"step"' "$WORK/traj.jsonl")" == 8 ]] || fail "expected 8 steps in the trajectory"

# Replay: step 4 (in page()) shows the recorded, buggy line 41 although the original now
# holds the fix; the last step shows the fix.
start_app "--replay '$WORK/traj.jsonl'"
wait_for "step [0-9]+/[0-9]+" 60
keys "0"
for _ in 1 2 3 4; do keys "l"; done
wait_for "│ step 4/8 │" 30
wait_for "╭─ paging\.py ─" 30
wait_for "41 │        return max\(1, len\(self\.items\) // self\.per_page\)" 30
text "$"
wait_for "│ step 8/8 │" 30
keys "h"
wait_for "41 │        return max\(1, -\(-len" 30
quit_app
echo "tmux_smoke: OK (w: $APPLY)"
