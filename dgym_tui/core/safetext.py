"""Text from the sandbox is data: terminal control characters are taken out before it is shown.

Everything a sandboxed program prints, every file it writes and every name it gives a
file may reach a person's terminal (``dgym play``, ``dgym replay --show``) or a Textual
widget, which passes such characters on to the terminal. An escape sequence there can
set the window title (OSC 2), fill the clipboard (OSC 52), move the cursor to forge
what was printed (CSI), or talk to the terminal in other ways. :func:`strip_controls`
is the one rule, applied where observations are made (``RepoEnv``) and where the front
ends show text that did not come through an observation (file contents, file names,
trajectory files).

The rule:

- newline and tab stay;
- ``\\r\\n`` becomes ``\\n``, and a lone ``\\r`` becomes ``\\n`` too, so text a program
  "overwrites" on its line (a progress bar, or a forged ``PASSED`` over ``FAILED``)
  stays visible, each version on its own line (in a file shown with line numbers, a
  lone ``\\r`` is removed instead: ``keep_lines``);
- an escape sequence (ESC, or its 8-bit C1 form) is removed whole: CSI with its
  parameters; OSC, DCS, SOS, PM and APC with their text up to the terminator (BEL or
  ST), or up to the end of the line when unterminated (so the rest of an observation,
  dgym's own notes included, cannot be swallowed); any other ESC with the characters
  of its sequence;
- every other C0 control (U+0000-U+001F), DEL (U+007F) and C1 control (U+0080-U+009F)
  is removed.
"""

from __future__ import annotations

import re

_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI: parameters, intermediates, final byte
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # strings
    r"|\x1b[ -/]*[0-~]?"  # any other escape sequence (ESC 7, ESC ( B, ESC c, ...)
)
#: Every control character but newline and tab (``\r`` included: it is replaced first).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str, keep_lines: bool = False) -> str:
    """Return ``text`` without terminal control characters (the module's rule).

    Args:
        text: any text, e.g. a program's output, a file's content or a file name.
        keep_lines: for a file shown with its line numbers: a lone ``\r`` is removed
            instead of becoming a newline, so the text keeps its ``\n`` lines (nothing
            else the rule does adds or removes a newline).

    Returns:
        The text with only printable characters, newlines and tabs; unchanged (the
        same object) when it holds no control character.
    """
    if not _CONTROL.search(text):
        return text
    text = text.replace("\r\n", "\n")
    if not keep_lines:
        text = text.replace("\r", "\n")
    return _CONTROL.sub("", _SEQUENCE.sub("", text))


def one_line(text: str) -> str:
    """Return ``text`` for a one-line label (a file name, a title): the module's rule,
    and newlines and tabs shown as spaces.

    Args:
        text: a name or short text from the sandbox.

    Returns:
        One line of printable characters.
    """
    return strip_controls(text).replace("\n", " ").replace("\t", " ")


__all__ = ["one_line", "strip_controls"]
