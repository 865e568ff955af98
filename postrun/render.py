"""Human-readable views of a stored session: the ``show`` timeline, and the pieces the Markdown
and HTML exports share with it.

Pure functions from v1.2 records (plus the store's own columns) to text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from postrun.nesting import Nesting, nest
from postrun.records import summed_metrics
from postrun.store.query import HistoryEntry, SessionDetails
from postrun.store.vault import KeptVersion
from postrun.text import one_line, plural, printable, size_text

_ONE_LINE_CHARS = 100


def step_summary(step: Mapping[str, Any]) -> str:
    """What the step was, in one line: the command, the path, the text, the tool."""
    payload = step["payload"]
    kind = step["type"]
    if kind == "command":
        return one_line(payload.get("command", "(command not recorded)"), _ONE_LINE_CHARS)
    if kind == "edit":
        action = "create" if payload.get("is_full_write") else "edit"
        return f"{action} {printable(payload['path'])}"
    if kind == "read":
        span = payload.get("range")
        return printable(payload["path"]) + (f" (lines {span[0]}-{span[1]})" if span else "")
    if kind == "message":
        text = payload.get("text")
        shown = one_line(text, _ONE_LINE_CHARS) if text is not None else "(text not recorded)"
        return f"{printable(payload['role'])}: {shown}"
    tool = printable(payload["tool_name"])
    given = key_input(payload.get("raw", {}).get("input"))
    return f"{tool}: {one_line(given, _ONE_LINE_CHARS)}" if given else tool


# The field that says what a tool call was for, by the names Cline's tools give it (a search's
# query, a helper's task, a question, a page); a tool without any shows its first text field.
_KEY_INPUTS = ("query", "task", "question", "url", "skill", "title", "path", "command", "prompt", "name")


def key_input(tool_input: Any) -> str | None:
    """The one input a reviewer wants to see for a tool call (None when it has none)."""
    if isinstance(tool_input, str):
        return tool_input or None
    if not isinstance(tool_input, dict):
        return None
    named = (tool_input.get(key) for key in _KEY_INPUTS)
    texts = (value for value in tool_input.values() if isinstance(value, str) and value)
    return next((value for value in named if isinstance(value, str) and value), None) or next(texts, None)


def error_line(step: Mapping[str, Any]) -> str | None:
    """The first line of a failed step's error message (None when it did not fail or says nothing)."""
    if step["outcome"] != "failed" or "error" not in step:
        return None
    lines = str(step["error"].get("message", "")).strip().splitlines()
    return one_line(lines[0], _ONE_LINE_CHARS) if lines else None


REFERENCE_ONLY_NOTE = (
    "reference only: the agent's files do not hold all of this step's content"
    " (a command left running, an output kept elsewhere); what they hold is shown"
)


def outcome_label(step: Mapping[str, Any]) -> str:
    """ok / failed (exit N, error type) / pending, plus reference-only and decision notes."""
    parts = [step["outcome"]]
    exit_code = step["payload"].get("exit_code") if step["type"] == "command" else None
    details = []
    if exit_code is not None:
        details.append(f"exit {exit_code}")
    if "error" in step:
        details.append(step["error"]["type"])
    if details:
        parts[0] += f" ({', '.join(details)})"
    if step["decision"] in ("rejected", "accepted"):
        parts.append(step["decision"])
    if step["content_status"] == "reference_only":
        parts.append("reference only")
    return ", ".join(parts)


def flag_lines(step: Mapping[str, Any]) -> list[str]:
    """One line per flag: ``danger dangerous_command: <reason>``."""
    return [f"{flag['severity']} {flag['kind']}: {one_line(flag['reason'])}" for flag in step["flags"]]


def _count_phrase(steps: Sequence[Mapping[str, Any]]) -> str:
    by_type = Counter(step["type"] for step in steps)
    failed = sum(1 for step in steps if step["outcome"] == "failed")
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(by_type.items()))
    return f"{len(steps)} ({kinds}), {failed} failed" if steps else "0"


def session_header(envelope: Mapping[str, Any], details: SessionDetails, title: str) -> list[str]:
    session = envelope["session"]
    agent = session["agent"]
    workspace = session["workspace"]
    lines = [f"session   {session['id']}  ({agent['kind']} {agent['version']})"]
    if title:
        lines.append(f"title     {one_line(title, _ONE_LINE_CHARS)}")
    where = workspace["root"] or "(unknown)"
    repo = [value for value in (workspace.get("repo"), details.git_branch) if value]
    lines.append(f"workspace {where}" + (f"  ({', '.join(repo)})" if repo else ""))
    if details.model or details.provider:
        lines.append(f"model     {' / '.join(v for v in (details.provider, details.model) if v)}")
    ended = session.get("ended_at")
    status = f" ({details.status})" if details.status else ""
    lines.append(f"started   {session['started_at']}   " + (f"ended {ended}{status}" if ended else f"open{status}"))
    prompted = sum(1 for turn in envelope["turns"] if turn["index"] >= 1)
    lines.append(
        f"steps     {_count_phrase(envelope['steps'])}; {plural(prompted, 'turn')},"
        f" {plural(len(envelope['segments']), 'segment')}"
    )
    metrics = session.get("metrics")
    if metrics:
        tokens = metrics["tokens"]
        lines.append(
            f"cost      ${metrics['cost_usd']:.4f}, {plural(metrics['api_requests'], 'API request')},"
            f" tokens in {tokens['input']:,} / out {tokens['output']:,}"
            f" (cache read {tokens['cache_read']:,}, write {tokens['cache_creation']:,})"
            + _helpers_share(details.helper_metrics.values())
        )
    lines.append(f"stored    on {details.captured_on}, first {details.ingested_at}, last change {details.updated_at}")
    if details.source_removed:
        lines.append(
            f"source    removed: {details.lead_file} is gone (its agent deleted it); the store keeps the session,"
            f" `postrun raw {session['id']} --to DIR` gives its files back"
        )
    return [printable(line) for line in lines]  # every field came from the agent's files


def _helpers_share(helpers: Iterable[Mapping[str, Any]]) -> str:
    """What the helpers' own calls account for (the session's figures include it)."""
    shares = list(helpers)
    total = summed_metrics(shares)
    if total is None:
        return ""
    return (
        f"; {plural(len(shares), 'helper')} ${total['cost_usd']:.4f}, {plural(total['api_requests'], 'API request')},"
        f" tokens in {total['tokens']['input']:,} / out {total['tokens']['output']:,}"
    )


def turn_title(turn: Mapping[str, Any]) -> str:
    """A turn's heading in the Markdown and HTML exports."""
    heading = "Before the first prompt" if turn["index"] == 0 else f"Turn {turn['index']}"
    return f"{heading} · {turn['mode']}" if "mode" in turn else heading


def _actor_runs(
    steps: Sequence[Mapping[str, Any]], actors: Mapping[str, Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any] | None, list[Mapping[str, Any]]]]:
    """Consecutive steps of one actor: (the helper, its steps), or (None, the lead's steps).

    A helper's steps follow the step that started it, so each run nests under the step before it.
    """
    runs: list[tuple[Mapping[str, Any] | None, list[Mapping[str, Any]]]] = []
    for step in steps:
        actor = actors.get(step["actor_id"])
        helper = actor if actor is not None and "parent_id" in actor else None
        if runs and runs[-1][0] is helper:
            runs[-1][1].append(step)
        else:
            runs.append((helper, [step]))
    return runs


def helper_heading(helper: Mapping[str, Any], steps: Sequence[Mapping[str, Any]]) -> str:
    """``subagent <id>`` or ``teammate <id>: <name>``; a label that only repeats the task
    shown right below it is left out."""
    label = helper.get("label")
    task = steps[0]["payload"].get("text") if steps and steps[0]["type"] == "message" else None
    repeats = isinstance(task, str) and isinstance(label, str) and task.strip().startswith(label)
    named = f": {one_line(label, _ONE_LINE_CHARS)}" if label and label != helper["id"] and not repeats else ""
    return f"{printable(helper['type'])} {printable(helper['id'])}{named}"


def steps_by_turn_of(envelope: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Each turn's steps, in seq order (the envelope lists steps in seq order)."""
    by_turn: dict[str, list[Mapping[str, Any]]] = {}
    for step in envelope["steps"]:
        by_turn.setdefault(step["turn_id"], []).append(step)
    return by_turn


def _turn_heading(turn: Mapping[str, Any], prompt: str | None) -> str:
    if turn["index"] == 0:
        return "before the first prompt"
    mode = f" [{turn['mode']}]" if "mode" in turn else ""
    return f"turn {turn['index']}{mode}" + (f": {one_line(prompt, _ONE_LINE_CHARS)}" if prompt else "")


def timeline(
    envelope: Mapping[str, Any], details: SessionDetails, history: Iterable[HistoryEntry] | None = None
) -> list[str]:
    """The ``postrun show`` view: a header, then every turn with one line per step."""
    lines = session_header(envelope, details, details.title)
    steps_by_turn = steps_by_turn_of(envelope)
    actors = {actor["id"]: actor for actor in envelope["actors"]}
    segments = {segment["index"]: segment for segment in envelope["segments"]}
    nesting = nest(envelope["steps"])
    nested = {actor_id for started in nesting.started.values() for actor_id in started}
    current_segment = 0
    for turn in envelope["turns"]:
        if turn["segment_index"] != current_segment:
            current_segment = turn["segment_index"]
            segment = segments.get(current_segment, {})
            lines += [
                "",
                f"── {segment.get('start_reason', 'segment')} (segment {current_segment})"
                f" at {segment.get('started_at', '?')} ──",
            ]
        steps = steps_by_turn.get(turn["id"], [])
        prompt = next(
            (s["payload"].get("text") for s in steps if s["type"] == "message" and s["payload"]["role"] == "user"),
            None,
        )
        lines += ["", _turn_heading(turn, prompt) + f"  ({turn['started_at']})"]
        # A helper a step started is shown under that step (helpers of helpers too, as the
        # exports and the review app nest them); the others where their steps fall.
        shown_here = [step for step in steps if step["actor_id"] not in nested]
        for helper, run in _actor_runs(shown_here, actors):
            indent = "  "
            if helper is not None:
                lines.append(f"    ↳ {helper_heading(helper, run)}")
                indent = "      "
            for step in run:
                lines += _step_lines(step, indent, nesting, actors)
    if any(step["content_status"] == "reference_only" for step in envelope["steps"]):
        lines += ["", REFERENCE_ONLY_NOTE]
    if history is not None:
        entries = list(history)
        lines += ["", f"history   {plural(len(entries), 'earlier version')}"]
        for entry in entries:
            what = step_summary(entry.record) if entry.kind == "step" else _record_summary(entry.kind, entry.record)
            lines.append(f"  {entry.replaced_at}  {entry.reason:<8} {entry.kind} {entry.record_id}: {what}")
    # One escaping for the whole view, so no field from the agent's files reaches the terminal raw.
    return [printable(line) for line in lines]


def _step_lines(
    step: Mapping[str, Any], indent: str, nesting: Nesting, actors: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """A step's line, its error and flags, then each helper it started, indented under it."""
    lines = [f"{indent}#{step['seq']:<4} {step['type']:<8} {step_summary(step)}  [{outcome_label(step)}]"]
    error = error_line(step)
    if error:
        lines.append(f"{indent}{'':<14}error: {error}")
    lines += [f"{indent}{'':<14}! {line}" for line in flag_lines(step)]
    for actor_id, steps in nesting.helpers_of(step):
        helper = actors.get(actor_id, {"id": actor_id, "type": "helper"})
        lines.append(f"{indent}  ↳ {helper_heading(helper, steps)}")
        for helper_step in steps:
            lines += _step_lines(helper_step, indent + "    ", nesting, actors)
    return lines


def raw_versions(versions: Sequence[KeptVersion]) -> list[str]:
    """``show --history``: which versions of the session's own files the vault keeps."""
    if not versions:
        return ["", "raw copies  none kept (ingested while keep_raw was off)"]
    lines = ["", f"raw copies  {plural(len(versions), 'version')} (postrun raw ID --version N --to DIR)"]
    for version in versions:
        when = f"replaced {version.replaced_at}" if version.replaced_at else "newest"
        names = ", ".join(f.name.rsplit("/", 1)[-1] for f in version.files)
        files = f"{plural(len(version.files), 'file')}, {size_text(version.bytes)}"
        lines.append(f"  version {version.number}  {when}  {files}: {names}")
    return lines


def _record_summary(kind: str, record: Mapping[str, Any]) -> str:
    """An earlier session, turn, segment or actor record, in one line."""
    if kind == "session":
        ended = f" ended {record['ended_at']}" if "ended_at" in record else " open"
        metrics = record.get("metrics")
        cost = f", ${metrics['cost_usd']:.4f} over {plural(metrics['api_requests'], 'API request')}" if metrics else ""
        return f"session started {record['started_at']},{ended}{cost}"
    if kind == "turn":
        mode = f" [{record['mode']}]" if "mode" in record else ""
        return f"turn {record['index']}{mode} started {record['started_at']}"
    if kind == "segment":
        ended = f" to {record['ended_at']}" if "ended_at" in record else ""
        return f"segment {record['index']} ({record['start_reason']}) from {record['started_at']}{ended}"
    return one_line(", ".join(f"{key}={value}" for key, value in sorted(record.items())), _ONE_LINE_CHARS)
