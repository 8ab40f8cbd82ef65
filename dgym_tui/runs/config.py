"""Run configurations: YAML files for ``dgym run``, ``-p key.sub=value`` overrides, validation.

Every key, its default and meaning are in ``KEYS`` below, the single source;
:func:`keys_markdown` renders it as a table (``dgym config-keys``, docs/headless.md).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dgym_tui.core.terminals.base import DEFAULT_MAX_OUTPUT
from dgym_tui.episode.session import DEFAULT_MAX_STEPS

POLICIES = ("agent", "human", "solution")
TERMINALS = ("local", "bwrap", "docker")
MODES = ("auto", "approve", "human")


class ConfigError(ValueError):
    """A run configuration is wrong; the message is one line naming the key."""


#: key -> (default, description). "env.*" keys are the environment options.
KEYS: dict[str, tuple[Any, str]] = {
    "benchmark": (None, ("benchmark name, or {name: ..., <option>: ...} (options go to the "
                         "loader; `local` needs path and entrypoint)")),
    "tasks": ("all", "`all`, one task name, or a list of task names"),
    "policy": ("agent", ("`agent` (LLM agent), `human` (actions typed on stdin) or `solution` "
                         "(apply the task's reference solution, then submit)")),
    "agent": ("debug_agent", "agent spec name (a file in agents/) or a path to a spec YAML"),
    "llm": (None, "entry name in the LLM config (required with policy `agent`)"),
    "llm_config": (None, "path of llm.yaml; empty: the default location"),
    "terminal": (None, "`local` (trusted code), `bwrap` (a local sandbox) or `docker`; "
                       "empty: `bwrap` where it works, else `local` with a warning; a task "
                       "folder's own dgym.yaml may raise it but not lower it; a benchmark's "
                       "task that names its terminal (a SWE-bench image: `docker`) keeps it"),
    "image": (None, "Docker image; empty: the task's image or the environment's default"),
    "max_steps": (DEFAULT_MAX_STEPS, "step budget per episode"),
    "mode": ("auto", "`auto` for `dgym run`; `approve` and `human` are for the TUI"),
    "stop_on_resolved": (False, "end an episode as soon as every test passes"),
    "output_dir": (None, "results folder; empty: runs/<config file stem>"),
    "workers": (1, "tasks run in parallel (threads); `dgym run -n` wins"),
    "env.eval_timeout": (120, "seconds the entrypoint may run"),
    "env.pdb_timeout": (30, "seconds one pdb command may take (pytest under pdb starts slowly)"),
    "env.max_output": (DEFAULT_MAX_OUTPUT, "bytes of tool output kept per observation "
                       "(head and tail)"),
    "mcp_servers": (None, "MCP servers whose tools join the toolbox: a list of {name, command "
                          "or url, transport, prefix, tools, timeout, env} (docs/mcp.md)"),
}
ENV_KEYS = tuple(k.split(".", 1)[1] for k in KEYS if k.startswith("env."))
TOP_KEYS = tuple(dict.fromkeys(k.split(".", 1)[0] for k in KEYS))


def keys_markdown() -> str:
    """Return the config keys as a Markdown table (key, default, meaning)."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for key, (default, text) in KEYS.items():
        shown = "—" if default is None else f"`{default}`"
        rows.append(f"| `{key}` | {shown} | {text} |")
    return "\n".join(rows)


@dataclass
class RunConfig:
    """A validated run configuration (see the module docstring for every key).

    Attributes:
        benchmark: benchmark name.
        benchmark_options: keyword options for ``get_benchmark``.
        tasks: task names, or None for all tasks.
        env: RepoEnv options (``eval_timeout``, ``pdb_timeout``, ``max_output``).
        source: the config file it came from (None when built in code).
    """

    benchmark: str
    benchmark_options: dict[str, Any] = field(default_factory=dict)
    tasks: list[str] | None = None
    policy: str = "agent"
    agent: str = "debug_agent"
    llm: str | None = None
    llm_config: str | None = None
    terminal: str | None = None
    image: str | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    mode: str = "auto"
    stop_on_resolved: bool = False
    output_dir: Path = Path("runs/run")
    workers: int = 1
    env: dict[str, Any] = field(default_factory=dict)
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    source: Path | None = None

    def env_overrides(self) -> dict[str, Any]:
        """RepoEnv keyword arguments from this config (terminal, image, env.*).

        ``terminal`` / ``image`` are left out when not configured, so the
        task's own values (or the environment's defaults) apply.
        """
        chosen = {"terminal": self.terminal, "image": self.image,
                  "mcp_servers": [dict(server) for server in self.mcp_servers]}
        return {**self.env, **{key: value for key, value in chosen.items() if value}}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict in the YAML shape (for trajectory headers and status files)."""
        data = asdict(self)
        data["benchmark"] = {"name": self.benchmark, **self.benchmark_options}
        del data["benchmark_options"]
        data["tasks"] = self.tasks if self.tasks is not None else "all"
        data["output_dir"] = str(self.output_dir)
        data["source"] = str(self.source) if self.source else None
        return data


def parse_override(text: str) -> tuple[list[str], Any]:
    """Split ``"key.sub=value"`` into (``["key", "sub"]``, value parsed as YAML).

    Raises:
        ConfigError: no ``=``, or an empty key part.
    """
    key, sep, raw = text.partition("=")
    parts = key.strip().split(".")
    if not sep or not all(parts):
        raise ConfigError(f"bad override {text!r}; write -p key.sub=value")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    return parts, value


def apply_override(data: dict[str, Any], text: str) -> None:
    """Apply one ``-p key.sub=value`` override to the raw config dict, in place.

    ``benchmark.<option>=...`` turns a plain ``benchmark: NAME`` into a mapping.

    Raises:
        ConfigError: malformed override, unknown key (named, with a suggestion),
            or a sub-key of a key that is not a mapping.
    """
    parts, value = parse_override(text)
    top = parts[0]
    if (top not in TOP_KEYS or len(parts) > 2
            or (len(parts) == 2 and top not in ("benchmark", "env"))
            or (top == "env" and len(parts) == 2 and parts[1] not in ENV_KEYS)):
        raise ConfigError(_unknown(".".join(parts), list(KEYS)))
    if len(parts) == 1:
        data[top] = value
        return
    node = data.get(top)
    if isinstance(node, str):
        node = {"name": node}
    elif node is None:
        node = {}
    elif not isinstance(node, dict):
        raise ConfigError(f"config key {top!r} must be a mapping to take {'.'.join(parts)!r}")
    node[parts[1]] = value
    data[top] = node


def _unknown(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}?" if close else f"known keys: {', '.join(known)}"
    return f"unknown config key {key!r}; {hint}"


def _int(key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"config key {key!r} must be an integer >= {minimum}, got {value!r}")
    return value


def _choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(f"config key {key!r} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _opt_str(key: str, value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ConfigError(f"config key {key!r} must be a string, got {value!r}")
    return str(value)


def validate(data: dict[str, Any], source: Path | None = None) -> RunConfig:
    """Check a raw config dict and return a :class:`RunConfig`.

    Args:
        data: the parsed YAML (after overrides).
        source: the file it came from; its stem names the default output_dir,
            and relative ``llm_config`` / ``benchmark.path`` / ``output_dir``
            values stay relative to the current directory.

    Raises:
        ConfigError: one line naming the first bad key and what is expected.
    """
    if not isinstance(data, dict):
        raise ConfigError("a run config must be a YAML mapping of keys to values")
    for key in data:
        if key not in TOP_KEYS:
            raise ConfigError(_unknown(str(key), list(KEYS)))
    bench = data.get("benchmark")
    if bench is None or bench == "":
        raise ConfigError("config key 'benchmark' is missing; e.g. benchmark: mini")
    if isinstance(bench, str):
        name, options = bench, {}
    elif isinstance(bench, dict):
        options = dict(bench)
        name = options.pop("name", None)
        if not isinstance(name, str) or not name:
            raise ConfigError("config key 'benchmark.name' is missing; e.g. benchmark: {name: mini}")
    else:
        raise ConfigError(f"config key 'benchmark' must be a name or a mapping, got {bench!r}")
    tasks = data.get("tasks", "all")
    if tasks in (None, "all"):
        task_list = None
    elif isinstance(tasks, str):
        task_list = [tasks]
    elif isinstance(tasks, list) and tasks and all(isinstance(t, (str, int)) for t in tasks):
        task_list = [str(t) for t in tasks]
    else:
        raise ConfigError(f"config key 'tasks' must be 'all', a name or a list of names, got {tasks!r}")
    env = data.get("env") or {}
    if not isinstance(env, dict):
        raise ConfigError(f"config key 'env' must be a mapping, got {env!r}")
    for key, value in env.items():
        if key not in ENV_KEYS:
            raise ConfigError(_unknown(f"env.{key}", list(KEYS)))
        if key == "max_output":
            _int("env.max_output", value, 1)
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"config key 'env.{key}' must be a positive number, got {value!r}")
    stop = data.get("stop_on_resolved", False)
    if not isinstance(stop, bool):
        raise ConfigError(f"config key 'stop_on_resolved' must be true or false, got {stop!r}")
    from dgym_tui.core.tools.mcp_client import parse_servers

    try:
        servers = [spec.to_dict() for spec in parse_servers(data.get("mcp_servers"))]
    except ValueError as exc:
        raise ConfigError(f"config key {exc}") from None
    output = _opt_str("output_dir", data.get("output_dir"))
    stem = source.stem if source is not None else "run"
    config = RunConfig(
        benchmark=name, benchmark_options=options, tasks=task_list,
        policy=_choice("policy", data.get("policy", "agent"), POLICIES),
        agent=_opt_str("agent", data.get("agent", "debug_agent")) or "debug_agent",
        llm=_opt_str("llm", data.get("llm")),
        llm_config=_opt_str("llm_config", data.get("llm_config")),
        terminal=(None if data.get("terminal") in (None, "")
                  else _choice("terminal", data.get("terminal"), TERMINALS)),
        image=_opt_str("image", data.get("image")),
        max_steps=_int("max_steps", data.get("max_steps", DEFAULT_MAX_STEPS), 1),
        mode=_choice("mode", data.get("mode", "auto"), MODES),
        stop_on_resolved=stop,
        output_dir=Path(output) if output else Path("runs") / stem,
        workers=_int("workers", data.get("workers", 1), 1),
        env=dict(env), mcp_servers=servers, source=source)
    if config.policy == "agent" and not config.llm:
        raise ConfigError("config key 'llm' is missing: policy 'agent' needs an LLM entry name "
                          "(e.g. -p llm=gpt-4o; see dgym init-llm-config)")
    return config


def bundled_configs() -> list[str]:
    """Names (file stems) of the example run configs shipped in ``data/configs``."""
    from dgym_tui.support.resources import resource_dir

    try:
        folder = resource_dir("data") / "configs"
    except FileNotFoundError:
        return []
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def find_config(path: str | os.PathLike[str]) -> Path:
    """Return ``path`` if it exists, else the bundled config of that name
    (``mini_solution`` or ``mini_solution.yaml``), else ``path`` unchanged."""
    candidate = Path(path)
    if candidate.exists() or candidate.parent != Path("."):
        return candidate
    stem = candidate.stem if candidate.suffix in (".yaml", ".yml") else candidate.name
    if stem in bundled_configs():
        from dgym_tui.support.resources import resource_dir

        return resource_dir("data") / "configs" / f"{stem}.yaml"
    return candidate


def load_config(path: str | os.PathLike[str] | None, overrides: list[str] = ()) -> RunConfig:
    """Read a YAML run config, apply ``-p`` overrides in order, validate.

    Args:
        path: the YAML file, or the name of a config shipped with dgym-tui
            (``mini_solution``; see :func:`bundled_configs`), or None to start
            from an empty config (then the overrides must name at least
            ``benchmark``).
        overrides: ``"key.sub=value"`` strings; values are parsed as YAML
            (``max_steps=10`` is an int, ``tasks=[a,b]`` a list).

    Returns:
        The validated :class:`RunConfig`.

    Raises:
        ConfigError: unreadable file, bad YAML, unknown key or bad value —
            one line naming the problem.
    """
    data: dict[str, Any] = {}
    source = None
    if path is not None:
        source = find_config(path)
        try:
            text = source.read_text(encoding="utf-8")
        except FileNotFoundError:
            bundled = ", ".join(bundled_configs()) or "none"
            raise ConfigError(f"config file {source} not found; bundled configs: "
                              f"{bundled}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config file {source}: {exc}") from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None)
            detail = f" ({problem})" if problem else ""
            raise ConfigError(f"config file {source}{where}: invalid YAML{detail}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {source} must hold a mapping of keys to values")
        data = loaded
    for override in overrides:
        apply_override(data, override)
    return validate(data, source)
