"""LLM access: ``llm.yaml`` entries and one chat-completion call with retries.

This is the only module that imports litellm, and it does so lazily (inside
functions): ``import dgym_tui.llm.client`` stays cheap, and a person using the TUI in
human mode never pays litellm's ~2 s import.

``llm.yaml`` maps entry names to endpoints::

    gpt-4o:
      model: openai/gpt-4o          # litellm model string (provider/model)
      api_key_env: OPENAI_API_KEY   # name of the env var that holds the key
      temperature: 0.0
      max_tokens: 4096              # completion tokens per call
      context_window: 128000        # prompt + completion tokens the model accepts
      tool_calling: native          # native | text

The file is looked up in this order: the explicit ``path`` argument, the env
var ``DGYM_LLM_CONFIG``, ``$XDG_CONFIG_HOME/dgym-tui/llm.yaml`` (default
``~/.config/dgym-tui/llm.yaml``). ``dgym init-llm-config`` writes a commented
template (:func:`write_llm_config_template`).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from dgym_tui.core.errors import first_line
from dgym_tui.episode.records import Usage

log = logging.getLogger(__name__)

CONFIG_ENV = "DGYM_LLM_CONFIG"
TOOL_CALLING_MODES = ("native", "text")


class LLMConfigError(Exception):
    """A problem the user fixes in llm.yaml or the environment (one-line message)."""


class LLMError(Exception):
    """The model call failed for good (after retries, or a non-retryable error)."""


class ContextTooLong(LLMError):
    """Even the shortest history (system prompt, task, latest turn) does not fit."""


class MalformedResponse(LLMError):
    """The server answered 200 but with no usable reply (e.g. ``"choices": []``)."""


#: How servers word a context overflow (matched case-insensitively in the error text):
#: llama-cpp-python "Requested tokens (9000) exceed context window of 8192"; llama.cpp
#: server "request (9000 tokens) exceeds the available context size (8192 tokens)",
#: "Context size has been exceeded", type exceed_context_size_error; vLLM / OpenAI
#: "This model's maximum context length is 8192 tokens. However, you requested ...",
#: vLLM "... is longer than the maximum model length of 8192"; Ollama "the input
#: length exceeds the context length"; OpenAI code context_length_exceeded.
CONTEXT_OVERFLOW = re.compile("|".join((
    r"exceeds? (?:the )?context window",
    r"exceeds? the available context size",
    r"context size has been exceeded",
    r"exceed_context_size_error",
    r"maximum context length is",
    r"longer than the maximum model length",
    r"exceeds? the context length",
    r"context[_ ]length[_ ]exceeded",
)), re.IGNORECASE)
# the server's window and its count of our prompt, where the wording gives them
_OVERFLOW_WINDOW = re.compile(r"(?:context window of|available context size \(|maximum context "
                              r"length is|maximum model length of|n_ctx\W+)\s*(\d+)", re.IGNORECASE)
_OVERFLOW_PROMPT = re.compile(r"(?:requested tokens \(|request \(|you requested \d+ tokens \(|"
                              r"messages resulted in |prompt \(length |n_prompt_tokens\W+)\s*(\d+)",
                              re.IGNORECASE)

#: Fraction added to the (calibrated) prompt-token estimate before comparing it
#: with the context window: tokenizers and chat templates differ.
SAFETY_MARGIN = 0.1
#: Completion tokens kept free when ``max_tokens`` is not set (at most a quarter of the window).
DEFAULT_COMPLETION_RESERVE = 512


def context_overflow(text: str) -> tuple[bool, int | None, int | None]:
    """Recognise a context-overflow error of llama.cpp, llama-cpp-python, vLLM, Ollama or OpenAI.

    Args:
        text: the error message (or the whole error body).

    Returns:
        ``(is_overflow, window, prompt_tokens)``: the server's context window
        and its count of the prompt in tokens when the wording states them,
        else None.
    """
    if not CONTEXT_OVERFLOW.search(text or ""):
        return False, None, None
    window = _OVERFLOW_WINDOW.search(text)
    prompt = _OVERFLOW_PROMPT.search(text)
    return True, int(window.group(1)) if window else None, int(prompt.group(1)) if prompt else None


@dataclass
class LLMConfig:
    """One named entry of llm.yaml.

    Attributes:
        name: the entry's key in llm.yaml.
        model: litellm model string, e.g. ``"openai/gpt-4o"``.
        api_base: endpoint URL, or None for the provider's default.
        api_key: the key itself (prefer ``api_key_env``).
        api_key_env: name of the env var holding the key.
        temperature: sampling temperature; None leaves the provider default.
        max_tokens: completion-token cap per call; None leaves the default.
        context_window: prompt + completion tokens the model accepts; None
            takes litellm's figure for known models, and for unknown ones
            disables the up-front length check (an overflow reported by the
            provider is still handled).
        tool_calling: ``"native"`` (function calling) or ``"text"`` (a fenced
            ``tool_call`` block in the reply).
        retries: extra attempts after a rate limit (429), 5xx or connection error.
        retry_base_delay: seconds before the first retry; doubles each time.
        timeout: seconds per request.
        input_cost_per_token / output_cost_per_token: US dollars, for models
            litellm has no price for (otherwise the cost is 0.0).
        extra: further keyword arguments passed to ``litellm.completion``.
    """

    name: str
    model: str
    api_base: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    temperature: float | None = 0.0
    max_tokens: int | None = None
    context_window: int | None = None
    tool_calling: str = "native"
    retries: int = 4
    retry_base_delay: float = 1.0
    timeout: float = 300.0
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, name: str, data: dict[str, Any], source: str = "llm.yaml") -> LLMConfig:
        """Build an entry from its YAML mapping.

        Raises:
            LLMConfigError: missing ``model``, unknown keys, or a bad ``tool_calling``.
        """
        if not isinstance(data, dict):
            raise LLMConfigError(f"{source}: entry {name!r} must be a mapping of settings")
        known = {f.name for f in fields(cls)} - {"name"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise LLMConfigError(f"{source}: entry {name!r} has unknown key(s) "
                                 f"{', '.join(unknown)}; known keys: {', '.join(sorted(known))}")
        if not data.get("model"):
            raise LLMConfigError(f"{source}: entry {name!r} needs a 'model' "
                                 f"(a litellm model string such as openai/gpt-4o)")
        for key, value in data.items():
            if value is None and cls.__dataclass_fields__[key].default is None:
                continue  # "leave it to the provider"
            types, description = _FIELD_TYPES[key]
            if not isinstance(value, types) or isinstance(value, bool):
                raise LLMConfigError(f"{source}: entry {name!r}: {key} must be {description}, "
                                     f"not {value!r}")
        config = cls(name=name, **data)
        if config.tool_calling not in TOOL_CALLING_MODES:
            raise LLMConfigError(f"{source}: entry {name!r}: tool_calling must be "
                                 f"'native' or 'text', not {config.tool_calling!r}")
        return config

    def resolve_api_key(self) -> str | None:
        """Return the API key: ``api_key``, else the value of env var ``api_key_env``.

        Raises:
            LLMConfigError: ``api_key_env`` names an env var that is not set.
        """
        if self.api_key:
            return self.api_key
        if self.api_key_env:
            value = os.environ.get(self.api_key_env)
            if not value:
                raise LLMConfigError(f"LLM {self.name!r} reads its API key from env var "
                                     f"{self.api_key_env}, which is not set; export it")
            return value
        return None


#: llm.yaml keys -> (accepted types, description); null is accepted where the default is None.
_FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    **{k: ((str,), "a string") for k in ("model", "api_base", "api_key", "api_key_env",
                                          "tool_calling")},
    **{k: ((int, float), "a number") for k in ("temperature", "retry_base_delay", "timeout",
                                                "input_cost_per_token", "output_cost_per_token")},
    **{k: ((int,), "a whole number") for k in ("max_tokens", "context_window", "retries")},
    "extra": ((dict,), "a mapping"),
}


def default_config_path() -> Path:
    """Return where llm.yaml is looked for when no path is given.

    ``$DGYM_LLM_CONFIG`` if set, else ``$XDG_CONFIG_HOME/dgym-tui/llm.yaml``
    (``~/.config/dgym-tui/llm.yaml`` when XDG_CONFIG_HOME is unset).
    """
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV]).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "dgym-tui" / "llm.yaml"


def load_llm_configs(path: str | os.PathLike | None = None) -> dict[str, LLMConfig]:
    """Read every entry of llm.yaml.

    Args:
        path: the file; None uses :func:`default_config_path`.

    Returns:
        ``{entry name: LLMConfig}`` in file order.

    Raises:
        LLMConfigError: the file is missing (the message says how to create
            it), is not valid YAML, or holds an invalid entry.
    """
    import yaml

    file = Path(path).expanduser() if path else default_config_path()
    if not file.is_file():
        raise LLMConfigError(f"no LLM config at {file}; create one with "
                             f"`dgym init-llm-config` and fill in your endpoint")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise LLMConfigError(f"{file}{where}: not valid YAML; fix the file") from None
    if not isinstance(data, dict):
        raise LLMConfigError(f"{file}: expected a mapping of entry names to settings")
    return {str(name): LLMConfig.from_dict(str(name), entry or {}, str(file))
            for name, entry in data.items()}


def get_llm_config(name: str, path: str | os.PathLike | None = None) -> LLMConfig:
    """Return the llm.yaml entry called ``name``.

    Raises:
        LLMConfigError: no config file, or no such entry (the message lists
            the known entries).
    """
    configs = load_llm_configs(path)
    if name not in configs:
        known = ", ".join(configs) or "(none)"
        raise LLMConfigError(f"no LLM entry {name!r} in {path or default_config_path()}; "
                             f"known entries: {known}")
    return configs[name]


_TEMPLATE = """\
# dgym-tui LLM endpoints. Each top-level key is an entry name you pass to
# `--llm NAME`. Keys of an entry:
#   model           litellm model string: provider/model (required)
#   api_base        endpoint URL (leave out for the provider's default)
#   api_key_env     name of the env var that holds the API key (preferred)
#   api_key         the key itself (avoid committing it anywhere)
#   temperature     sampling temperature (default 0.0)
#   max_tokens      completion tokens per call
#   context_window  prompt + completion tokens the model accepts; the oldest
#                   turns are dropped from the prompt to stay below it
#   tool_calling    native (function calling) | text (a fenced tool_call block)
#   retries         extra attempts on rate limits / server errors (default 4)
#   retry_base_delay  seconds before the first retry, doubled each time (default 1)
#   timeout         seconds per request (default 300)
#   input_cost_per_token / output_cost_per_token  US dollars, for models
#                   litellm has no price for

gpt-4o:
  model: openai/gpt-4o
  api_key_env: OPENAI_API_KEY
  temperature: 0.0
  max_tokens: 4096
  context_window: 128000
  tool_calling: native

claude-sonnet:
  model: anthropic/claude-3-7-sonnet-20250219
  api_key_env: ANTHROPIC_API_KEY
  max_tokens: 8192
  context_window: 200000

# A local OpenAI-compatible server (vLLM, llama.cpp, Ollama, ...).
local:
  model: openai/my-model
  api_base: http://127.0.0.1:8000/v1
  api_key: none
  context_window: 32768
  tool_calling: text
"""


def write_llm_config_template(directory: str | os.PathLike | None = None,
                              file: bool = False) -> Path:
    """Write a commented llm.yaml template and return its path.

    Args:
        directory: folder to write ``llm.yaml`` into (a name ending in ``.yaml`` /
            ``.yml`` is the file itself); None uses the folder of
            :func:`default_config_path`. Created if missing.
        file: ``directory`` is the file to write, whatever its name.

    Returns:
        The path of the written file.

    Raises:
        LLMConfigError: the file already exists (it is never overwritten).
    """
    folder = Path(directory).expanduser() if directory else default_config_path().parent
    target = folder if file or folder.suffix in (".yaml", ".yml") else folder / "llm.yaml"
    if target.exists():
        raise LLMConfigError(f"{target} already exists; edit it or remove it first")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_TEMPLATE, encoding="utf-8")
    return target


def _litellm():
    """Import litellm once, offline and quietly, and return the module."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


MAX_RETRY_AFTER = 60.0  # seconds: cap on a server's Retry-After we honour


def _retry_after(exc: Exception) -> float:
    """Seconds the server asked us to wait (``Retry-After`` header), capped; 0 if none."""
    headers = getattr(exc, "litellm_response_headers", None) or {}
    try:
        return min(max(float(headers.get("retry-after") or 0), 0.0), MAX_RETRY_AFTER)
    except (TypeError, ValueError):  # an HTTP date or garbage: use our own backoff
        return 0.0


@dataclass
class LLMResponse:
    """One assistant reply.

    Attributes:
        content: the reply's text ("" when none).
        tool_calls: OpenAI-shaped calls ``[{"id", "type": "function",
            "function": {"name": str, "arguments": str}}]`` (arguments as sent).
        usage: tokens and cost of this call.
        message: the assistant message as a plain dict (for the history / debugging).
        trimmed: how many history messages were dropped to fit the context window.
        prompt: the messages actually sent (after trimming).
    """

    content: str
    tool_calls: list[dict[str, Any]]
    usage: Usage
    message: dict[str, Any]
    trimmed: int = 0
    prompt: list[dict[str, Any]] = field(default_factory=list)


def history_units(messages: list[dict[str, Any]], keep_first: int) -> list[list[int]]:
    """Group the message indexes after the first ``keep_first`` into units that
    must be dropped together: an assistant message with tool calls and the tool
    results that answer it form one unit; any other message is a unit alone."""
    units: list[list[int]] = []
    for i in range(keep_first, len(messages)):
        if messages[i].get("role") == "tool" and units:
            units[-1].append(i)
        else:
            units.append([i])
    return units


def drop_oldest(messages: list[dict[str, Any]], drop: int,
                keep_first: int = 2) -> tuple[list[dict[str, Any]], int]:
    """Return ``messages`` without the ``drop`` oldest history units.

    The first ``keep_first`` messages stay; when anything is dropped a short
    user note takes its place. Returns ``(messages, number of messages dropped)``.
    """
    if drop <= 0:
        return messages, 0
    units = history_units(messages, keep_first)
    kept = [messages[i] for unit in units[drop:] for i in unit]
    dropped = sum(len(unit) for unit in units[:drop])
    note = {"role": "user", "content": f"[{dropped} earlier messages were removed "
                                       f"to fit the model's context window.]"}
    return messages[:keep_first] + [note] + kept, dropped


def fewest_units_to_drop(messages: list[dict[str, Any]], fits: Callable[[list[dict]], bool],
                         keep_first: int = 2) -> int:
    """Return the smallest number of oldest history units to drop so that
    ``fits(drop_oldest(messages, n)[0])`` holds; the latest unit is never dropped.

    Raises:
        ContextTooLong: it does not fit even with only the kept head and the latest unit.
    """
    if fits(messages):
        return 0
    lo, hi = 1, len(history_units(messages, keep_first)) - 1
    best = None
    while lo <= hi:  # binary search: dropping more never makes the prompt longer
        mid = (lo + hi) // 2
        if fits(drop_oldest(messages, mid, keep_first)[0]):
            best, hi = mid, mid - 1
        else:
            lo = mid + 1
    if best is None:
        raise ContextTooLong("the prompt does not fit the model's context window even "
                             "with only the task and the latest turn; raise context_window "
                             "or shorten the observations")
    return best


class LLM:
    """A chat model behind one llm.yaml entry.

    Args:
        config: the entry, or its name (looked up with :func:`get_llm_config`).
        config_path: llm.yaml to read when ``config`` is a name.
        sleep: function used to wait between retries (seconds); tests may
            replace it.
    """

    def __init__(self, config: LLMConfig | str, config_path: str | os.PathLike | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = get_llm_config(config, config_path) if isinstance(config, str) else config
        self._sleep = sleep
        self.api_key = self.config.resolve_api_key()
        #: server tokens per estimated token, learned from the last call's usage
        self.calibration = 1.0
        self._server_window: int | None = None  # a window an overflow error told us

    def count_tokens(self, messages: list[dict[str, Any]],
                     tools: list[dict[str, Any]] | None = None) -> int:
        """Estimate the prompt's tokens with ``litellm.token_counter`` (tools included)."""
        litellm = _litellm()
        try:
            return int(litellm.token_counter(model=self.config.model, messages=messages,
                                             tools=tools or None))
        except Exception:  # noqa: BLE001  unknown tokenizer or message shape: estimate
            text = json.dumps(messages) + json.dumps(tools or [])
            return len(text) // 3

    def estimate_tokens(self, messages: list[dict[str, Any]],
                        tools: list[dict[str, Any]] | None = None) -> int:
        """The prompt tokens the server will count: :meth:`count_tokens` times
        :attr:`calibration`, plus :data:`SAFETY_MARGIN`."""
        return math.ceil(self.count_tokens(messages, tools) * self.calibration
                         * (1 + SAFETY_MARGIN))

    @property
    def context_window(self) -> int | None:
        """Tokens the model accepts: ``config.context_window``, else litellm's
        model map (``max_input_tokens``), else None (unknown: no up-front check).
        A smaller window stated by the server in an overflow error wins."""
        window = self.config.context_window or self._model_window
        if self._server_window and (not window or self._server_window < window):
            return self._server_window
        return window

    @functools.cached_property
    def _model_window(self) -> int | None:
        """litellm's ``max_input_tokens`` of the model (None: not in its map)."""
        try:
            info = _litellm().get_model_info(self.config.model)
            return int(info.get("max_input_tokens") or 0) or None
        except Exception:  # noqa: BLE001  model not in litellm's map
            return None

    def _fits(self, tools: list[dict[str, Any]] | None) -> Callable[[list[dict]], bool]:
        window = self.context_window
        if not window:
            return lambda _messages: True
        budget = window - (self.config.max_tokens or min(DEFAULT_COMPLETION_RESERVE, window // 4))
        return lambda messages: self.estimate_tokens(messages, tools) <= budget

    def _calibrate(self, server_tokens: int, messages: list[dict], tools: list[dict] | None) -> None:
        """Learn the ratio of the server's prompt count to our estimate, kept within 1-4:
        a server that counts fewer tokens than we do is not believed (a wrong or
        made-up usage figure would let the next prompt overflow)."""
        ours = self.count_tokens(messages, tools)
        if server_tokens > 0 and ours > 0:
            self.calibration = min(max(server_tokens / ours, 1.0), 4.0)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                 keep_first: int = 2) -> LLMResponse:
        """Ask the model for the next assistant message.

        The prompt is trimmed first when its estimate (:meth:`estimate_tokens`:
        calibrated from the previous call's ``usage.prompt_tokens``, plus a
        safety margin) exceeds ``context_window`` minus the completion tokens
        (oldest history dropped, the first ``keep_first`` messages and the
        latest turn kept). When the server still reports a context overflow
        (the wordings of :data:`CONTEXT_OVERFLOW`), the window and prompt
        count it states are learned and the prompt trimmed again (else half
        of the remaining history is dropped) and the call repeated. Rate
        limits (429), 5xx, connection errors, timeouts and malformed replies
        (e.g. ``"choices": []``) are retried ``config.retries`` times with
        exponential backoff starting at ``config.retry_base_delay`` seconds
        (longer when the server sends ``Retry-After``, up to 60 s).

        Args:
            messages: OpenAI-format chat messages, oldest first.
            tools: OpenAI function schemas (native tool calling), or None.
            keep_first: leading messages never dropped (system prompt, task).

        Returns:
            An :class:`LLMResponse`.

        Raises:
            LLMConfigError: authentication failed (the message names the env var).
            ContextTooLong: the prompt cannot be made to fit.
            LLMError: any other failure (MalformedResponse for an unusable
                reply), after retries where they apply.
        """
        litellm = _litellm()
        n_units = len(history_units(messages, keep_first))
        drop = fewest_units_to_drop(messages, self._fits(tools), keep_first)
        retryable = (litellm.RateLimitError, litellm.InternalServerError,
                     litellm.ServiceUnavailableError, litellm.APIConnectionError,
                     litellm.Timeout, MalformedResponse)
        attempt = 0
        while True:
            prompt, trimmed = drop_oldest(messages, drop, keep_first)
            try:
                response = self._to_response(litellm, self._call(litellm, prompt, tools), trimmed)
                break
            except Exception as exc:  # noqa: BLE001  sorted below
                overflow, window, server_tokens = context_overflow(str(exc))
                if overflow or isinstance(exc, litellm.ContextWindowExceededError):
                    drop = self._drop_after_overflow(messages, tools, keep_first, drop, n_units,
                                                     prompt, window, server_tokens)
                    continue
                if isinstance(exc, litellm.AuthenticationError):
                    where = (f"check env var {self.config.api_key_env}" if self.config.api_key_env
                             else "check api_key / api_key_env in llm.yaml")
                    raise LLMConfigError(f"LLM {self.config.name!r} rejected the API key "
                                         f"({first_line(exc, 300)}); {where}") from None
                if not isinstance(exc, retryable):  # bad request, unknown model, ...
                    raise LLMError(f"LLM {self.config.name!r} call failed: "
                                   f"{first_line(exc, 300)}") from exc
                if attempt >= self.config.retries:
                    error = type(exc) if isinstance(exc, LLMError) else LLMError
                    raise error(f"LLM {self.config.name!r} failed after {attempt + 1} "
                                   f"attempts: {first_line(exc, 300)}") from None
                delay = max(self.config.retry_base_delay * (2 ** attempt), _retry_after(exc))
                log.warning("LLM %s: %s; retry %d in %.2fs", self.config.name,
                            type(exc).__name__, attempt + 1, delay)
                self._sleep(delay)
                attempt += 1
        if self.context_window and response.usage.prompt_tokens:
            self._calibrate(response.usage.prompt_tokens, prompt, tools)
        response.prompt = prompt
        return response

    def _drop_after_overflow(self, messages: list[dict], tools: list[dict] | None, keep_first: int,
                             drop: int, n_units: int, sent: list[dict], window: int | None,
                             server_tokens: int | None) -> int:
        """How many history units to drop after the server refused ``sent`` as too long.

        Raises:
            ContextTooLong: nothing is left to drop.
        """
        if drop >= n_units - 1:
            raise ContextTooLong("the model reports its context window is exceeded "
                                 "even with only the task and the latest turn")
        if window:
            self._server_window = window
        if server_tokens:
            self._calibrate(server_tokens, sent, tools)
        try:
            needed = fewest_units_to_drop(messages, self._fits(tools), keep_first)
        except ContextTooLong:
            needed = n_units - 1
        # what the learned window / calibration ask for, else half of what is left
        new = needed if needed > drop else drop + max(1, (n_units - 1 - drop) // 2)
        log.warning("LLM %s: context window exceeded; dropping %d oldest turns",
                    self.config.name, new)
        return min(new, n_units - 1)

    def _call(self, litellm, messages: list[dict], tools: list[dict] | None):
        optional = {"api_base": self.config.api_base or None, "api_key": self.api_key or None,
                    "temperature": self.config.temperature,
                    "max_tokens": self.config.max_tokens or None, "tools": tools or None}
        return litellm.completion(**{  # our values win over the entry's extra keyword arguments
            **self.config.extra, "model": self.config.model, "messages": messages,
            "timeout": self.config.timeout, "max_retries": 0,  # retries are ours: bounded, visible
            **{key: value for key, value in optional.items() if value is not None}})

    def _to_response(self, litellm, response, trimmed: int) -> LLMResponse:
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        if message is None:
            raise MalformedResponse("the server's reply has no choices[0].message")
        if not isinstance(message.content or "", str):
            raise MalformedResponse("the server's reply content is not text")
        tool_calls = [{"id": call.id, "type": "function",
                       "function": {"name": call.function.name,
                                    "arguments": call.function.arguments}}
                      for call in (message.tool_calls or [])]
        content = message.content or ""
        raw: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            raw["tool_calls"] = tool_calls
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        return LLMResponse(content=content, tool_calls=tool_calls, message=raw, trimmed=trimmed,
                           usage=Usage(prompt, completion,
                                       self._cost(litellm, response, prompt, completion)))

    def _cost(self, litellm, response, prompt: int, completion: int) -> float:
        cfg = self.config
        if cfg.input_cost_per_token is not None or cfg.output_cost_per_token is not None:
            return ((cfg.input_cost_per_token or 0.0) * prompt
                    + (cfg.output_cost_per_token or 0.0) * completion)
        try:
            return float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # noqa: BLE001  model without a known price
            return 0.0
