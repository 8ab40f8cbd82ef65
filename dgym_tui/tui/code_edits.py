"""Editing code in the source view (one ``rewrite`` per edit) and applying the patch to the original."""

from __future__ import annotations

from textual import on, work
from textual.message_pump import MessagePump
from textual.widgets import TabbedContent

from dgym_tui.core.types import ToolCall
from dgym_tui.tui.messages import PatchApplied
from dgym_tui.tui.screens.modals import CodeEditScreen, ConfirmScreen
from dgym_tui.tui.widgets.diff_view import DiffView


class CodeEdits(MessagePump):
    """Mixin of :class:`~dgym_tui.tui.app.DgymApp`: the code editor (``E``), the diff tab (``p``)
    and applying the working copy's patch to the original repository (``w``).
    """

    def action_edit_code(self) -> None:
        """Edit the source view's selected lines (the cursor line without a selection)."""
        view = self.source_view
        if view.path is None:  # nothing shown, or a file that cannot be (binary)
            why = view.placeholder if view.placeholder.startswith("(") else ""
            self.notify(f"nothing to edit: {why}" if why else "open a file first (file tree)",
                        severity="warning")
            return
        first, last = view.selection
        self.edit_code(view.path, first, last)

    def _edit_refusal(self, path: str) -> str | None:
        """Why lines of ``path`` cannot be edited now (one line), or None."""
        if self.replay is not None or self.session is None:
            return "replay: fork (f) to edit code"
        if not self.started:
            return "the episode has not started yet"
        if self.session.done:
            return "the episode is over"
        if self.busy:
            return "busy: wait for the current step to finish"
        if "rewrite" not in self.session.tool_specs():
            return "the rewrite tool is not enabled in this episode"
        if path not in self._workspace.files:
            return f"{path} is hidden by .debugignore: it cannot be edited"
        if path in self._workspace.readonly:
            return f"{path} is read-only (.debugreadonly): it cannot be edited"
        return None

    def edit_code(self, path: str, start: int, end: int) -> None:
        """Open the code editor on lines ``start``..``end`` (1-based, inclusive) of ``path``.

        Ctrl+S in the editor runs ONE ``rewrite`` tool call through the session,
        recorded as a manual action; a read-only / ignored file, replay or a
        busy / finished episode is refused with a notification saying why.
        """
        why = self._edit_refusal(path)
        if why is not None:
            self.notify(why, severity="warning")
            return
        text = self.source_view.text if self.source_view.path == path else None
        if text is None:
            self.notify(f"open {path} first (file tree)", severity="warning")
            return
        old = "".join(text.splitlines(keepends=True)[start - 1:end])

        def done(new_code: str | None) -> None:
            self.source_view.action_clear_selection()
            if new_code is None:
                return
            if new_code == old or new_code == old.rstrip("\n"):
                self.notify("unchanged: nothing rewritten")
                return
            self.act(ToolCall(name="rewrite", arguments={
                "path": path, "start": start, "end": end, "new_code": new_code}))

        self.push_screen(CodeEditScreen(path, start, end, old), done)

    def action_show_diff(self) -> None:
        """Show the diff tab (kept current by every step that changes a file) and focus it:
        up / down / pgup / pgdn scroll it, ``z`` zooms the side column to the whole screen
        (a long line is read there), ``o`` / ``esc`` go back to the source."""
        self.query_one(TabbedContent).active = "tab-diff"
        self.query_one(DiffView).focus()

    def _will_offer_apply(self) -> bool:
        """True when the episode's end brings the apply dialog (changes to apply, not
        asked yet): its title then says that the episode is over, not a toast over it."""
        return bool(self.ask_apply and self.can_apply and not self._asked_apply
                    and self.session is not None and (self._workspace.patch or "").strip())

    def _offer_apply(self) -> None:
        if (self.ask_apply and self.can_apply and not self._asked_apply
                and self.session is not None):
            self._asked_apply = True
            self.action_apply_patch(ended=self.session.reason or "done")

    def action_apply_patch(self, ended: str = "") -> None:
        session = self.session
        if session is None or not self.can_apply or not self.started:
            return
        patch = self._workspace.patch or ""
        if not patch.strip():
            self.notify("no changes to apply")
            return
        source = session.source_path

        def done(yes: bool | None) -> None:
            if yes:
                self._apply_patch(source)

        self.query_one(DiffView).set_patch(patch)
        over = f"The episode is over ({ended}). " if ended else ""
        self.push_screen(ConfirmScreen(f"{over}Apply the patch to the original repository "
                                       f"{source}?", patch), done)

    @work(thread=True, group="session", exit_on_error=False)
    def _apply_patch(self, source: str) -> None:
        """Write the working copy's changes into the original (a three-way merge with edits
        made there meanwhile, or a refusal that names the files), under the session's lock."""
        from dgym_tui.episode.session import SessionError  # loaded with the session

        session = self.session
        self._calling(True)
        try:
            changed = session.apply_to_source()
        except SessionError:  # closed meanwhile (quit)
            return
        except Exception as exc:  # noqa: BLE001  refused (conflicting edits) or I/O
            self.post_message(PatchApplied(source, [], str(exc) or type(exc).__name__))
            return
        finally:
            self._calling(False)
        self.post_message(PatchApplied(source, changed))

    def _unapplied_fix(self) -> bool:
        """True when the last eval passed and its patch was not written to the original
        with ``w`` (only where ``w`` applies and the apply prompt is on)."""
        result = self._last_result
        patch = self._workspace.patch or ""
        return bool(self.session is not None and self.started and self.can_apply
                    and self.ask_apply and result is not None and result.resolved
                    and patch.strip() and patch != self._applied_patch)

    def _quit_answer(self, answer: str | None) -> None:
        """The quit question's answer: apply then quit, quit anyway, or stay (None)."""
        if answer == "quit":
            self._quit_confirmed = True
            self.call_later(self.action_quit_app)
        elif answer == "apply":
            self._quit_after_apply = True
            self._apply_patch(self.session.source_path)

    @on(PatchApplied)
    def _patch_applied(self, message: PatchApplied) -> None:
        if message.error is not None:
            self._quit_after_apply = False  # refused: stay, so the fix is not lost
            self.notify(f"patch NOT applied: {message.error.splitlines()[0]}", severity="error",
                        title="apply", timeout=15)
            self.pdb_console.write(f"patch not applied to {message.source}: {message.error}",
                                   style="bold red")
            return
        self._applied_patch = self._workspace.patch
        if self._quit_after_apply:
            self.call_later(self.action_quit_app)
        self.notify(f"applied {len(message.changed)} file(s) to {message.source}")
        self.pdb_console.write(f"patch applied to {message.source}: "
                               f"{', '.join(message.changed)}")
