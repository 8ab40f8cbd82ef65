"""LLM agents: an agent spec (YAML + Jinja prompts) and the LLMAgent policy.

An agent spec lives in ``agents/NAME.yaml``; adding an agent means adding a file. Its
keys and the prompts' template variables: agents/README.md.

litellm is not imported here: :mod:`dgym_tui.llm.client` imports it when a model is
first called.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dgym_tui.core.types import ToolCall, decode_arguments
from dgym_tui.episode.examples import TaskExamples
from dgym_tui.episode.records import EpisodeInfo, Proposal, Turn, Usage
from dgym_tui.llm.tool_calls import ParsedCall, drop_unknown_arguments, parse_reply
from dgym_tui.policies.tool_examples import (
    example_calls,
    localise,
    localise_schema,
    main_example,
)

if TYPE_CHECKING:
    from dgym_tui.llm.client import LLM, LLMConfig

TEMPLATE_SUFFIXES = (".jinja", ".j2", ".jinja2", ".md", ".txt")
UNLOCK_COUNTERS = {"after_rewrites": "successful rewrites", "after_steps": "steps"}


class AgentSpecError(Exception):
    """An agent spec cannot be found or is invalid (one-line message)."""


@dataclass
class AgentSpec:
    """A parsed agent spec (see the module docstring for the YAML keys).

    Attributes:
        name, description: labels.
        tools: allowed tool names, in prompt order.
        system_prompt, instance_prompt: Jinja template sources.
        guidance: strategy text for the system template.
        unlock: ``{tool: {"after_rewrites" | "after_steps": int}}``.
        tool_calling: ``"native"``, ``"text"`` or None (use the LLM's setting).
        tool_options: ``{tool: {option: value}}`` for the environment's tools.
        mcp_servers: checked ``mcp_servers`` entries (dicts) whose tools join the toolbox.
        several_calls: ``"first"`` or ``"refuse"`` (see the module docstring).
        extra_arguments: ``"drop"`` or ``"refuse"``.
        path: the YAML file, or None for a spec built in code.
    """

    name: str
    description: str = ""
    tools: list[str] = field(default_factory=list)
    system_prompt: str = ""
    instance_prompt: str = "{{ task }}\n\n{{ initial_observation }}"
    guidance: str = ""
    unlock: dict[str, dict[str, int]] = field(default_factory=dict)
    tool_calling: str | None = None
    tool_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    several_calls: str = "first"
    extra_arguments: str = "drop"
    path: Path | None = None


#: the values of the spec keys that choose how forgiving validation is (first = default)
LENIENCY = {"several_calls": ("first", "refuse"), "extra_arguments": ("drop", "refuse")}


@dataclass
class TeamSpec:
    """A spec whose episode is played by several LLM agents in turn (``roles``).

    Attributes:
        name, description: labels.
        roles: ``{role: AgentSpec}`` in playing order (``info_seek_agent``:
            ``seeker`` then ``fixer``).
        max_steps: ``{role: steps}`` a role may take before the next one takes over.
        tools: every role's tools (what the environment must offer).
        path: the YAML file, or None.
    """

    name: str
    description: str = ""
    roles: dict[str, AgentSpec] = field(default_factory=dict)
    max_steps: dict[str, int] = field(default_factory=dict)
    tools: list[str] = field(default_factory=list)
    path: Path | None = None


def parse_team_spec(data: dict[str, Any], base: Path, source: str = "agent spec") -> TeamSpec:
    """Validate a spec with ``roles`` (each role an agent spec mapping, plus an
    optional ``max_steps``) and load the roles' templates.

    Raises:
        AgentSpecError: unknown keys, no roles, or an invalid role.
    """
    unknown = sorted(set(data) - {"name", "description", "roles"})
    if unknown:
        raise AgentSpecError(f"{source}: unknown key(s) {', '.join(unknown)} next to 'roles'")
    roles = data.get("roles")
    if not data.get("name") or not isinstance(roles, dict) or len(roles) < 2:
        raise AgentSpecError(f"{source}: a spec with roles needs a name and at least two roles")
    team = TeamSpec(name=str(data["name"]), description=str(data.get("description") or ""))
    for role, role_data in roles.items():
        if not isinstance(role_data, dict):
            raise AgentSpecError(f"{source}: role {role!r} must be a mapping")
        role_data = dict(role_data)
        steps = role_data.pop("max_steps", None)
        if steps is not None and (not isinstance(steps, int) or steps < 1):
            raise AgentSpecError(f"{source}: roles.{role}.max_steps must be a positive integer")
        role_data.setdefault("name", f"{team.name}.{role}")
        team.roles[str(role)] = parse_agent_spec(role_data, base, f"{source} (role {role})")
        if steps:
            team.max_steps[str(role)] = steps
        team.tools += [t for t in team.roles[str(role)].tools if t not in team.tools]
    return team


def available_agents() -> list[str]:
    """Return the names of the agent specs shipped in the agents/ folder, sorted."""
    from dgym_tui.support.resources import resource_dir

    try:
        return sorted(p.stem for p in resource_dir("agents").glob("*.yaml"))
    except FileNotFoundError:
        return []


def _read_template(value: Any, key: str, base: Path, source: str) -> str:
    if not isinstance(value, str):
        raise AgentSpecError(f"{source}: {key!r} must be a template text or a file path")
    if "\n" not in value and value.strip().endswith(TEMPLATE_SUFFIXES):
        file = (base / value.strip()).resolve()
        if not file.is_file():
            raise AgentSpecError(f"{source}: {key} file {value!r} not found next to the spec")
        return file.read_text(encoding="utf-8")
    return value


def parse_agent_spec(data: dict[str, Any], base: Path, source: str = "agent spec") -> AgentSpec:
    """Validate a spec mapping and load its templates.

    Args:
        data: the YAML mapping.
        base: folder against which template paths are resolved.
        source: name used in error messages (usually the file path).

    Raises:
        AgentSpecError: unknown keys, missing name/tools/system_prompt, bad
            unlock conditions, tool_calling, several_calls or extra_arguments value.
    """
    if not isinstance(data, dict):
        raise AgentSpecError(f"{source}: an agent spec must be a YAML mapping")
    known = {"name", "description", "tools", "system_prompt", "instance_prompt",
             "guidance", "unlock", "tool_calling", "tool_options", "mcp_servers",
             *LENIENCY}
    unknown = sorted(set(data) - known)
    if unknown:
        raise AgentSpecError(f"{source}: unknown key(s) {', '.join(unknown)}; "
                             f"known keys: {', '.join(sorted(known))}")
    for key in ("name", "tools", "system_prompt"):
        if not data.get(key):
            raise AgentSpecError(f"{source}: missing {key!r}")
    tools = data["tools"]
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise AgentSpecError(f"{source}: 'tools' must be a list of tool names")
    unlock = data.get("unlock") or {}
    for tool, condition in unlock.items():
        if tool not in tools:
            raise AgentSpecError(f"{source}: unlock names {tool!r}, which is not in 'tools'")
        if (not isinstance(condition, dict) or not condition
                or any(k not in UNLOCK_COUNTERS or not isinstance(v, int)
                       for k, v in condition.items())):
            raise AgentSpecError(f"{source}: unlock.{tool} must map "
                                 f"{' / '.join(UNLOCK_COUNTERS)} to an integer")
    tool_options = data.get("tool_options") or {}
    if not isinstance(tool_options, dict) or any(
            tool not in tools or not isinstance(values, dict) for tool, values in tool_options.items()):
        raise AgentSpecError(f"{source}: tool_options must map tools of 'tools' to a mapping of "
                             "options, e.g. {pdb: {auto_list: 3}}")
    mode = data.get("tool_calling")
    if mode not in (None, "native", "text"):
        raise AgentSpecError(f"{source}: tool_calling must be 'native' or 'text', not {mode!r}")
    for key, values in LENIENCY.items():
        if data.get(key, values[0]) not in values:
            raise AgentSpecError(f"{source}: {key} must be {' or '.join(map(repr, values))}, "
                                 f"not {data[key]!r}")
    from dgym_tui.core.tools.mcp_client import parse_servers

    try:
        servers = [server.to_dict() for server in parse_servers(data.get("mcp_servers"))]
    except ValueError as exc:
        raise AgentSpecError(f"{source}: {exc}") from None
    spec = AgentSpec(name=str(data["name"]), description=str(data.get("description") or ""),
                     tools=list(tools), guidance=str(data.get("guidance") or ""),
                     unlock={k: dict(v) for k, v in unlock.items()}, tool_calling=mode,
                     several_calls=data.get("several_calls", "first"),
                     extra_arguments=data.get("extra_arguments", "drop"),
                     tool_options={k: dict(v) for k, v in tool_options.items()},
                     mcp_servers=servers,
                     system_prompt=_read_template(data["system_prompt"], "system_prompt",
                                                  base, source))
    if data.get("instance_prompt"):
        spec.instance_prompt = _read_template(data["instance_prompt"], "instance_prompt",
                                              base, source)
    return spec


def load_agent_spec(name_or_path: str | os.PathLike) -> AgentSpec | TeamSpec:
    """Load an agent spec by name (``agents/NAME.yaml``) or from a YAML file path.

    Args:
        name_or_path: ``"debug_agent"`` or a path such as ``"my/agent.yaml"``.

    Returns:
        The parsed :class:`AgentSpec` with its templates loaded, or a
        :class:`TeamSpec` when the file has ``roles``.

    Raises:
        AgentSpecError: no such agent (the message lists the known ones), or
            the file is invalid.
    """
    import yaml

    text = str(name_or_path)
    path = Path(text).expanduser()
    if not (path.suffix in (".yaml", ".yml") or os.sep in text or "/" in text):
        from dgym_tui.support.resources import resource_dir

        try:
            path = resource_dir("agents") / f"{text}.yaml"
        except FileNotFoundError:
            path = Path(f"{text}.yaml")
        if not path.is_file():
            raise AgentSpecError(f"unknown agent {text!r}; known agents: "
                                 f"{', '.join(available_agents()) or '(none)'}, "
                                 f"or give the path of an agent YAML file")
    if not path.is_file():
        raise AgentSpecError(f"agent spec {path} not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        raise AgentSpecError(f"{path}: not valid YAML; fix the file") from None
    if isinstance(data, dict) and "roles" in data:
        spec: AgentSpec | TeamSpec = parse_team_spec(data, path.parent, str(path))
    else:
        spec = parse_agent_spec(data, path.parent, str(path))
    spec.path = path
    return spec


def _render(template: str, **variables: Any) -> str:
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=False,
                             autoescape=False)
    try:
        return env.from_string(template).render(**variables).strip()
    except jinja2.TemplateError as exc:
        raise AgentSpecError(f"prompt template error: {exc}") from None


def _arguments_json(call: ToolCall) -> str:
    args = call.arguments
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def format_text_call(call: ToolCall) -> str:
    """Render a tool call in the text format: a fenced ``tool_call`` JSON block."""
    args = call.arguments
    if isinstance(args, str):
        with contextlib.suppress(json.JSONDecodeError):
            args = json.loads(args)
    body = json.dumps({"name": call.name, "arguments": args}, ensure_ascii=False)
    return f"```tool_call\n{body}\n```"


def example_call(schemas: list[dict[str, Any]],
                 examples: TaskExamples | None = None) -> ToolCall | None:
    """Build a one-line example call of a real tool for the correction message.

    Args:
        schemas: OpenAI function schemas (``{"type": "function", "function": {...}}``)
            of the tools on offer, in prompt order.
        examples: the task's real file, line and test; None: placeholders.

    Returns:
        A ToolCall of the first tool that takes arguments (else the first tool):
        with the task's real file and line for the built-in tools, else its
        required arguments filled with placeholders of the right type
        (``"<path>"`` for a string named path); None when ``schemas`` is empty.
    """
    return main_example(schemas, examples or TaskExamples())


def _message_key(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False)


def _describe(call: ToolCall) -> str:
    return f"{call.name} {_arguments_json(call)}"


class LLMAgent:
    """A policy that asks an LLM for one tool call per turn.

    Args:
        spec: an :class:`AgentSpec`, an agent name or a spec path.
        llm: an :class:`~dgym_tui.llm.client.LLM`, an ``LLMConfig``, or an llm.yaml
            entry name.
        config_path: llm.yaml path when ``llm`` is a name.
        tool_calling: force ``"native"`` or ``"text"``; default: the spec's
            setting, else the LLM's.
        role: the role this agent plays in a team (recorded as ``raw["role"]``
            of each proposal), or None.

    Raises:
        AgentSpecError / LLMConfigError: bad spec or LLM entry.

    Attributes:
        name: the spec's name. actor: ``"agent"``. usage: total Usage of the episode.
    """

    actor = "agent"

    def __init__(self, spec: AgentSpec | str | os.PathLike, llm: LLM | LLMConfig | str,
                 config_path: str | os.PathLike | None = None,
                 tool_calling: str | None = None, role: str | None = None) -> None:
        from dgym_tui.llm.client import LLM

        self.spec = spec if isinstance(spec, AgentSpec) else load_agent_spec(spec)
        if not isinstance(self.spec, AgentSpec):
            raise AgentSpecError(f"agent {self.spec.name!r} has roles; build it with "
                                 "dgym_tui.policies.make_policy")
        self.role = role
        #: None: prompt message ids m<step>.<n> and the header's "system" / "task";
        #: a string: ids <prefix><step>.<n> only (a later role of a team has its own head)
        self.message_prefix: str | None = None
        self.llm = llm if isinstance(llm, LLM) else LLM(llm, config_path)
        self.name = self.spec.name
        self.tool_calling = (tool_calling or self.spec.tool_calling
                             or self.llm.config.tool_calling)
        if self.tool_calling not in ("native", "text"):
            raise AgentSpecError(f"tool_calling must be 'native' or 'text', "
                                 f"not {self.tool_calling!r}")
        self.info: EpisodeInfo | None = None
        self.usage = Usage()
        self._schemas: dict[str, dict[str, Any]] = {}
        self._message_ids: dict[str, str] = {}  # message JSON -> id in the trajectory
        self._absorbed = 0  # turns whose prompt messages are in _message_ids

    # -- episode -------------------------------------------------------------

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode: keep the schemas of the spec's tools that the env has."""
        self.info = info
        self.usage = Usage()
        by_name = {s["function"]["name"]: s for s in info.tool_schemas}
        wanted = [*self.spec.tools, *(n for n in info.remote_tools if n not in self.spec.tools)]
        self._schemas = {name: localise_schema(by_name[name], info.examples)
                         for name in wanted if name in by_name}
        system, task = self.build_messages([])[:2]
        self._message_ids = ({} if self.message_prefix else
                             {_message_key(system): "system", _message_key(task): "task"})
        self._absorbed = 0

    def prompt_header(self) -> dict[str, Any]:
        """What every prompt of the episode starts from, for the trajectory header.

        Returns:
            ``{"agent": name, "tool_calling": mode, "system": text, "task": text,
            "tools": [schemas of the agent's tools in the env]}``; steps refer to
            the first two messages as ``"system"`` / ``"task"`` and to tools by name.

        Raises:
            RuntimeError: :meth:`reset` was not called.
        """
        system, task = self.build_messages([])[:2]
        return {"agent": self.name, "tool_calling": self.tool_calling,
                "system": system["content"], "task": task["content"],
                "tools": list(self._schemas.values())}

    def prompt_record(self, sent: list[dict[str, Any]], turns: list[Turn], trimmed: int,
                       tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        """Describe the messages ``sent`` after ``turns`` by id (see :attr:`Turn.prompt`);
        a message not sent at a recorded step before gets the id ``m<step>.<n>``.

        Returns:
            ``{"sent": [ids], "new": {id: message}, "trimmed": int, "tools": [names] | None}``.
        """
        if len(turns) < self._absorbed:  # not the turns we saw (a new history): start over
            self._message_ids = dict(list(self._message_ids.items())
                                     [:0 if self.message_prefix else 2])
            self._absorbed = 0
        for turn in turns[self._absorbed:]:
            for message_id, message in ((turn.prompt or {}).get("new") or {}).items():
                self._message_ids.setdefault(_message_key(message), message_id)
        self._absorbed = len(turns)
        ids, new = [], {}
        for message in sent:
            key = _message_key(message)
            message_id = self._message_ids.get(key)
            if message_id is None:
                message_id = f"{self.message_prefix or 'm'}{len(turns) + 1}.{len(new)}"
                new[message_id] = message
                self._message_ids[key] = message_id  # a repeat within this prompt
            ids.append(message_id)
        for message_id in new:  # only recorded steps may define ids for later ones
            self._message_ids.pop(_message_key(new[message_id]))
        return {"sent": ids, "new": new, "trimmed": trimmed,
                "tools": [t["function"]["name"] for t in tools] if tools else None}

    @staticmethod
    def _counts(turns: list[Turn]) -> dict[str, int]:
        rewrites = sum(1 for t in turns if t.action is not None and t.action.name == "rewrite"
                       and t.result is not None and not t.result.error)
        return {"after_rewrites": rewrites, "after_steps": len(turns)}

    def locked_tools(self, turns: list[Turn]) -> dict[str, str]:
        """Return ``{tool: condition text}`` for tools still locked after ``turns``."""
        counts = self._counts(turns)
        locked = {}
        for tool, condition in self.spec.unlock.items():
            missing = [(k, n) for k, n in condition.items() if counts[k] < n]
            if tool in self._schemas and missing:
                locked[tool] = " and ".join(f"after {n} {UNLOCK_COUNTERS[k]} ({counts[k]} so far)"
                                            for k, n in missing)
        return locked

    def available_tools(self, turns: list[Turn]) -> list[str]:
        """Return the tool names offered after ``turns`` (allowed, present, unlocked)."""
        locked = self.locked_tools(turns)
        return [name for name in self._schemas if name not in locked]

    # -- prompt --------------------------------------------------------------

    def build_messages(self, turns: list[Turn]) -> list[dict[str, Any]]:
        """Return the chat messages for the next proposal.

        ``[system, user(task + initial observation), *history]``; each turn
        adds: executed -> assistant tool call + its result; rejected -> the
        tool result says the user rejected it (with the note); an invalid
        proposal -> the model's text + a user message saying what was wrong;
        a person's own action -> a user message with the action and result.
        A user message announces a tool when it unlocks.

        Raises:
            RuntimeError: :meth:`reset` was not called.
        """
        if self.info is None:
            raise RuntimeError("LLMAgent.reset(info) must be called before proposing")
        names = self.available_tools(turns)
        tools = [self._schemas[n]["function"] for n in names]
        example = example_call([self._schemas[n] for n in names], self.info.examples)
        system = _render(self.spec.system_prompt, agent=self.spec, guidance=self.spec.guidance,
                         tools=tools, locked=self.locked_tools(turns),
                         tool_calling=self.tool_calling,
                         instructions=localise(self.info.instructions, self.info.examples),
                         example=format_text_call(example) if example else "")
        instance = _render(self.spec.instance_prompt, agent=self.spec, task=self.info.task,
                           initial_observation=self.info.initial_observation,
                           example=format_text_call(example) if example else "")
        messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                          {"role": "user", "content": instance}]
        locked_before = set(self.locked_tools([]))
        for i, turn in enumerate(turns):
            messages.extend(self._turn_messages(turn, turns[:i]))
            locked_now = set(self.locked_tools(turns[: i + 1]))
            for tool in sorted(locked_before - locked_now):
                messages.append({"role": "user",
                                 "content": f"The `{tool}` tool is now unlocked; you may use it."})
            locked_before = locked_now
        return messages

    def _assistant(self, call: ToolCall, reasoning: str) -> dict[str, Any]:
        if self.tool_calling == "text":
            text = f"{reasoning.strip()}\n\n{format_text_call(call)}".strip()
            return {"role": "assistant", "content": text}
        message: dict[str, Any] = {"role": "assistant"}
        if reasoning:  # no content key at all otherwise: what the client sends anyway
            message["content"] = reasoning
        message["tool_calls"] = [{"id": call.id, "type": "function",
                                  "function": {"name": call.name,
                                               "arguments": _arguments_json(call)}}]
        return message

    def _result(self, call: ToolCall, text: str, output: bool = True) -> dict[str, Any]:
        """The tool result message; ``output`` False when ``text`` is a note, not tool output."""
        if self.tool_calling == "text":
            return {"role": "user", "content": f"Output of {call.name}:\n{text}" if output
                    else text}
        return {"role": "tool", "tool_call_id": call.id, "content": text}

    def correction(self, error: str, before: list[Turn]) -> str:
        """The user message that answers an invalid reply.

        Says what was wrong, then shows the exact format with a one-line
        example built from a real tool on offer on the task's own files, and
        lists the tools (after an unknown tool: each with an example call).

        Args:
            error: why the reply could not be run (without the
                prefix of old trajectories).
            before: the turns before the invalid one (they decide which tools
                were on offer).

        Returns:
            The message text.
        """
        names = self.available_tools(before)
        example = example_call([self._schemas[n] for n in names], self.info.examples)
        lines = [f"Your last reply could not be run: {error or 'it had no valid tool call'}."]
        block = f"\n{format_text_call(example)}" if example else ""
        if self.tool_calling == "native":
            if example:
                lines.append(f"Reply with exactly one tool call through function calling, e.g. "
                             f"`{example.name}` with arguments {_arguments_json(example)}; "
                             f"if you cannot, end your reply with one fenced block like this:"
                             f"{block}")
            else:
                lines.append("Reply with exactly one tool call through function calling.")
        else:
            lines.append("Reply with exactly one tool call: end your reply with one fenced "
                         "tool_call block holding a JSON object with the tool's \"name\" and its "
                         f"\"arguments\", e.g.:{block}")
        if names and error.startswith("unknown tool"):
            lines.append("The tools, each with an example that runs on this repository:")
            calls = example_calls([self._schemas[n] for n in names], self.info.examples)
            lines += [f"- {n}: {json.dumps({'name': n, 'arguments': c.arguments})}"
                      for n, c in calls.items()]
        elif names:
            lines.append(f"Available tools: {', '.join(names)}.")
        return "\n".join(lines)

    @staticmethod
    def reply_text(turn: Turn) -> str:
        """The invalid reply of ``turn`` as it goes back into the history: the raw
        content, with any native calls written out in the text format (they got no
        tool result); the turn's reasoning when it has no raw reply."""
        raw = turn.raw or {}
        if not raw:
            return turn.reasoning.strip()
        parts = [(raw.get("content") or "").strip()]
        for call in raw.get("tool_calls") or []:
            function = call.get("function") or {}
            parts.append(format_text_call(ToolCall(name=str(function.get("name") or ""),
                                                   arguments=function.get("arguments") or {})))
        return "\n\n".join(p for p in parts if p)

    def _turn_messages(self, turn: Turn, before: list[Turn]) -> list[dict[str, Any]]:
        observation = turn.result.observation if turn.result is not None else ""
        note = (turn.note or "").strip()
        noted = f" Note: {note}" if note else ""
        if turn.invalid:
            error = turn.error or note
            correction = self.correction(error, before)
            if turn.error and note:  # the session's warning about a repeated reply
                correction += f"\n{note}"
            return [{"role": "assistant", "content": self.reply_text(turn) or "(empty reply)"},
                    {"role": "user", "content": correction}]
        if turn.proposed is None:  # the person acted on their own
            return [{"role": "user", "content": f"The user ran `{_describe(turn.action)}` "
                                                f"themselves.{noted}\nOutput:\n{observation}"}]
        out = [self._assistant(turn.proposed, turn.reasoning)]
        if turn.action is None:  # rejected
            out.append(self._result(turn.proposed, f"The user rejected this action.{noted}",
                                    output=False))
        elif (turn.action.name, turn.action.arguments) != (turn.proposed.name,
                                                            turn.proposed.arguments):
            out.append(self._result(turn.proposed, f"The user edited this action and ran "
                                    f"`{_describe(turn.action)}` instead.{noted}\nOutput:\n"
                                    f"{observation}", output=False))
        else:
            notes = [*((turn.raw or {}).get("parse") or {}).get("notes", []), note]
            text = "\n\n".join([observation, *(f"[{n}]" for n in notes if n)])
            out.append(self._result(turn.proposed, text))
        return out

    # -- proposal ------------------------------------------------------------

    def propose(self, turns: list[Turn]) -> Proposal:
        """Ask the LLM for the next action.

        The call is read with :func:`~dgym_tui.llm.tool_calls.parse_reply`
        in either mode: native ``tool_calls``, ``<tool_call>`` tags, fenced or
        bare call JSON, our ``tool_call`` block with or without its opening
        fence. ``raw`` is the reply message as received plus ``"parse":
        {"form": str | None, "recovered": bool, "notes": [str]}`` (recovered:
        native mode, but the call was read from the text; notes, when any: what
        was left out, told to the model after the tool's output).

        Returns:
            A Proposal with one ToolCall, or ``action=None`` and ``error`` set
            when the reply had no call, an unknown or locked tool, a broken
            call block, or arguments that are not a JSON object. Several calls:
            the first runs (``several_calls: first``) or the reply is refused;
            arguments the tool's schema does not know are dropped when the rest
            is valid (``extra_arguments: drop``).

        Raises:
            LLMConfigError: authentication failed. LLMError: the model call
            failed after retries. RuntimeError: :meth:`reset` not called.
        """
        messages = self.build_messages(turns)
        available = self.available_tools(turns)
        tools = ([self._schemas[n] for n in available]
                 if self.tool_calling == "native" else None)
        response = self.llm.complete(messages, tools=tools)
        self.usage = self.usage + response.usage
        parsed = parse_reply(response.content, response.tool_calls, known_tools=self._schemas,
                             native=self.tool_calling == "native")
        raw = dict(response.message)
        raw["parse"] = {"form": parsed.form, "recovered": parsed.recovered}
        if self.role:
            raw["role"] = self.role
        action, error, notes = None, parsed.error, []
        if error is None:
            action, error, notes = self._validate(parsed.calls, available, turns)
        if notes:
            raw["parse"]["notes"] = notes
        return Proposal(action=action, reasoning=parsed.reasoning, error=error,
                        usage=response.usage, raw=raw,
                        prompt=self.prompt_record(response.prompt, turns, response.trimmed,
                                                   tools))

    def _validate(self, calls: list[ParsedCall], available: list[str], turns: list[Turn]
                  ) -> tuple[ToolCall | None, str | None, list[str]]:
        """``(action, error, notes)``: notes tell the model what was changed or left out."""
        if not calls:
            return None, "the reply contained no tool call", []
        notes = []
        if len(calls) > 1:
            names = ", ".join(call.name for call in calls)
            if self.spec.several_calls == "refuse":
                return None, (f"the reply contained {len(calls)} tool calls ({names}); "
                              f"make exactly one tool call per reply"), []
            rest = "the other one was not" if len(calls) == 2 else \
                f"the other {len(calls) - 1} were not"
            notes.append(f"Your reply held {len(calls)} tool calls ({names}); only the first "
                         f"({calls[0].name}) was run, {rest}. Make one tool call per reply.")
        call = calls[0]
        name, arguments = call.name, call.arguments
        if name not in available:
            locked = self.locked_tools(turns)
            if name in locked:
                return None, (f"the {name} tool is not available yet: it unlocks "
                              f"{locked[name]}"), []
            return None, self._unknown_tool(name, available), []
        try:
            arguments = decode_arguments(arguments)
        except ValueError as exc:
            return None, f"the arguments of the {name} call {exc}", []
        if self.spec.extra_arguments == "drop":
            arguments, dropped = drop_unknown_arguments(self._schemas[name], arguments)
            if dropped:
                notes.append(f"The argument(s) {', '.join(dropped)} are not parameters of "
                             f"{name} and were dropped.")
        action = (ToolCall(name=name, arguments=arguments, id=call.id) if call.id
                  else ToolCall(name=name, arguments=arguments))
        return action, None, notes

    def _unknown_tool(self, name: str, available: list[str]) -> str:
        """The error of a call to a tool that is not on offer: says which tool or test
        the name is close to (the correction then shows each tool with an example)."""
        message = f"unknown tool {name!r}"
        test = self.info.examples.test.rsplit("::", 1)[-1] if self.info else ""
        close = difflib.get_close_matches(name, available, n=1, cutoff=0.6)
        if test and (name == test or difflib.SequenceMatcher(None, name, test).ratio() >= 0.8
                     or name.startswith("test_")):
            message += " (that is the name of a test, not a tool: run the tests with eval)" \
                if "eval" in available else " (that is the name of a test, not a tool)"
        elif close:
            message += f" (did you mean {close[0]}?)"
        return f"{message}; available tools: {', '.join(available)}"
