"""bash: run a shell command in one persistent shell of the episode's sandbox.

The shell (a :class:`~dgym_tui.core.terminals.shell.ShellSession`) starts on
the first command, in the working copy's root and in the episode's terminal
(``bwrap`` / ``docker``: the same sandbox as pdb and the tests, so ignored
files stay invisible and read-only files unwritable). ``cd``, variables and
functions persist between steps. A command running past the timeout is
stopped with Ctrl-C and the shell is kept; a shell that ended (``exit``, a
kill) or had to be killed is started again by the next command.

Observation format: the command's output (stdout and stderr interleaved,
bounded to the environment's ``max_output`` bytes, working-copy path prefix
removed), then a line ``[exit code N]`` when it is not 0, and notes in square
brackets about what the tool did, e.g. ``[bash session started]``,
``[timeout: the command ran longer than 30 s and was stopped with Ctrl-C; the
shell is kept]``. Machine fields (``StepResult.data``): ``exit_code`` (int or
None), ``status`` (``done`` / ``timeout`` / ``killed`` / ``exited``),
``restarted`` (bool).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from dgym_tui.core.tools.base import EXAMPLE_FILE, Tool, ToolError, ToolOutput, register

if TYPE_CHECKING:  # the shell (pexpect) is imported when it first starts
    from dgym_tui.core.terminals.shell import ShellSession

#: Seconds the shell may take to start.
START_TIMEOUT = 30.0


@register
class BashTool(Tool):
    """Runs one shell command per call in a bash session that persists across steps."""

    name = "bash"
    instructions = (
        "Run a shell command in a persistent bash session inside the sandbox, starting in "
        "the repository root: `cd`, variables and functions persist between calls. Returns "
        "stdout and stderr. Commands read no input (stdin is empty): use non-interactive "
        f"forms (e.g. `git --no-pager diff`, `sed -n 1,40p {EXAMPLE_FILE}`). A command running "
        "too long is stopped; the shell is kept.")
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "command": {"type": "string",
                        "description": "the shell command, e.g. 'ls', "
                                       f"'grep -n def {EXAMPLE_FILE}', 'python -m pytest -x'"},
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    #: ``timeout``: seconds a command may run (None: the environment's ``eval_timeout``).
    settings: ClassVar[dict[str, Any]] = {"timeout": None}

    def __init__(self, env: Any, **options: Any) -> None:
        super().__init__(env, **options)
        self.session: ShellSession | None = None
        self._ended = ""  # why the last shell ended ("" : none ended since the episode began)

    @property
    def timeout(self) -> float:
        """Seconds one command may run."""
        value = self.options.get("timeout")
        return float(value) if value else float(self.env.eval_timeout)

    def on_reset(self) -> None:
        self.close()

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session = None
        self._ended = ""

    def run(self, command: str = "", **_: Any) -> ToolOutput:
        """Run ``command`` in the episode's shell; see the module docstring for the format.

        Args:
            command: bash text (several lines allowed).

        Returns:
            ToolOutput with the observation and ``exit_code``, ``status``, ``restarted``.

        Raises:
            ToolError: an empty command.
        """
        if not command.strip():
            raise ToolError("empty command; give a shell command, e.g. 'ls' or 'cat app.py'")
        notes: list[str] = []
        restarted = False
        if self.session is None or not self.session.alive:
            why = (f"restarted: {self._ended}" if self._ended
                   else "restarted: the previous shell had ended" if self.session is not None
                   else "started")
            from dgym_tui.core.terminals.shell import ShellSession, ShellStartError

            self.session = ShellSession(self.env.terminal, max_output=self.env.max_output)
            try:
                self.session.start(START_TIMEOUT)
            except ShellStartError as exc:
                self.session = None
                out = self._relativize(exc.output).strip()
                return ToolOutput(f"[bash could not start: {exc}. The next bash command tries "
                                  "again.]" + (f"\n{out}" if out else ""),
                                  data={"exit_code": None, "status": "exited",
                                        "restarted": False})
            notes.append(f"[bash session {why}]")
            restarted, self._ended = True, ""
        reply = self.session.run(command, self.timeout)
        body = self._relativize(reply.output).rstrip("\n")
        after: list[str] = []
        if reply.status == "done" and reply.exit_code:
            after.append(f"[exit code {reply.exit_code}]")
        elif reply.status == "timeout":
            after.append(f"[timeout: the command ran longer than {self.timeout:g} s and was "
                         "stopped with Ctrl-C; the shell is kept]")
        elif reply.status == "killed":
            after.append(f"[timeout: the command ran longer than {self.timeout:g} s and did "
                         "not stop on Ctrl-C; the shell was killed. The next bash command "
                         "starts a new one (variables and cd are lost)]")
            self.session, self._ended = None, "the previous command did not stop"
        elif reply.status == "exited":
            code = "" if reply.exit_code is None else f" with status {reply.exit_code}"
            after.append(f"[the shell exited{code}; the next bash command starts a new one "
                         "in the repository root (variables and cd are lost)]")
            self.session, self._ended = None, f"the previous shell exited{code}"
        text = "\n".join(p for p in (*notes, body, *after) if p) or "[no output]"
        return ToolOutput(text, data={"exit_code": reply.exit_code, "status": reply.status,
                                      "restarted": restarted})

    def _relativize(self, text: str) -> str:
        """Drop the working copy's absolute path prefix (the observation names relative paths)."""
        prefix = self.env.to_abs(".").rstrip("/") + "/"
        return text.replace(prefix, "")
