"""A stored session as OpenTelemetry GenAI spans: pure, records in, span records out.

One trace per session. The root span ``invoke_agent <kind>`` covers the session; under it a
span per turn of the root actor, and under a turn an ``execute_tool <tool>`` span per tool step
(every step that is not a message). A sub-agent is an ``invoke_agent`` span under the step that
started it (the step whose ``payload.raw.actor_id`` names it; else under its parent actor's
span), its own steps beneath it. Ids come from the session's and the records' own ids, so the
same session pushed twice gives the same spans.

A step has one time (``at``): its span ends where its actor's next later step starts (the
result was in by then), else at the actor's end; a span that holds others is stretched to hold
them. Content (prompts, a tool's arguments and result, a helper's task, error messages) is
left out unless ``content``; the envelope always passes the one redactor first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from postrun.review.redact import Redactor

AttributeValue = str | int | float | bool | tuple[str, ...]

TOOL_TYPE = "function"  # the agent generates the call, the agent's own client runs it
OTHER_ERROR = "_OTHER"  # the conventions' error.type when nothing more precise is known
_TOKENS = (
    ("input", "gen_ai.usage.input_tokens"),
    ("output", "gen_ai.usage.output_tokens"),
    ("cache_read", "gen_ai.usage.cache_read.input_tokens"),
    ("cache_creation", "gen_ai.usage.cache_creation.input_tokens"),
)


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One span as the push sends it; times in nanoseconds since the epoch."""

    name: str
    trace_id: int  # 128 bits
    span_id: int  # 64 bits
    parent_id: int | None
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    error_type: str | None = None  # set: status ERROR
    error_message: str | None = None  # the status description (content: only with ``content``)


def trace_id_of(session_id: str) -> int:
    return _hashed(128, "postrun trace", session_id)


def span_id_of(session_id: str, kind: str, key: str) -> int:
    return _hashed(64, "postrun span", session_id, kind, key)


def _hashed(bits: int, *parts: str) -> int:
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[: bits // 8], "big") or 1  # an all-zero id is invalid in OTLP


def nanoseconds(timestamp: str) -> int:
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def session_spans(
    envelope: Mapping[str, Any],
    *,
    model: str | None = None,
    provider: str | None = None,
    helper_metrics: Mapping[str, Mapping[str, Any]] | None = None,
    content: bool = False,
    redactor: Redactor,
) -> list[SpanRecord]:
    """The spans of one v1.2 envelope (as ``load_envelope`` gives it), root first, then in
    start order. ``helper_metrics``: each sub-agent's own usage, by actor id."""
    shown_model = None if model is None else redactor.text(model, "model")
    shown_provider = None if provider is None else redactor.text(provider, "provider")
    return _Builder(redactor.envelope(envelope), shown_model, shown_provider, helper_metrics or {}, content).spans()


@dataclass
class _Open:
    """A span being built: its end grows to hold its children."""

    name: str
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    attributes: dict[str, AttributeValue]
    error_type: str | None = None
    error_message: str | None = None


class _Builder:
    def __init__(
        self,
        envelope: Mapping[str, Any],
        model: str | None,
        provider: str | None,
        helper_metrics: Mapping[str, Mapping[str, Any]],
        content: bool,
    ) -> None:
        self.session: Mapping[str, Any] = envelope["session"]
        self.session_id: str = self.session["id"]
        self.kind: str = self.session["agent"]["kind"]
        self.actors: Sequence[Mapping[str, Any]] = envelope["actors"]
        self.turns: Sequence[Mapping[str, Any]] = envelope["turns"]
        self.steps: Sequence[Mapping[str, Any]] = envelope["steps"]
        self.model, self.provider, self.helper_metrics, self.content = model, provider, helper_metrics, content
        self.trace_id = trace_id_of(self.session_id)
        self.open: list[_Open] = []
        self.by_id: dict[int, _Open] = {}

    def spans(self) -> list[SpanRecord]:
        root = self._root()
        ends = self._step_ends()
        turns = {turn["id"]: self._turn(turn, root.span_id) for turn in self.turns if turn["actor_id"] == "root"}
        actors = {actor["id"]: span_id_of(self.session_id, "actor", actor["id"]) for actor in self.actors}
        actors["root"] = root.span_id
        spawned_by = {
            raw["actor_id"]: step
            for step in self.steps
            if step["type"] == "other" and isinstance(raw := step["payload"].get("raw"), dict)
            if isinstance(raw.get("actor_id"), str)
        }
        for actor in self.actors:
            if actor["id"] == "root":
                continue
            spawn = spawned_by.get(actor["id"])
            if spawn is not None:
                parent, start = span_id_of(self.session_id, "step", spawn["id"]), nanoseconds(spawn["at"])
            else:
                parent, start = actors.get(actor.get("parent_id", "root"), root.span_id), root.start_ns
            self._helper(actor, parent, start)
        for step in self.steps:
            if step["type"] == "message":
                continue
            if step["actor_id"] == "root":
                parent = turns.get(step["turn_id"], root.span_id)
            else:
                parent = actors.get(step["actor_id"], root.span_id)
            self._tool(step, parent, ends[step["id"]])
        self._settle_times()
        ordered = sorted(self.open, key=lambda span: (span.parent_id is not None, span.start_ns, span.name))
        return [self._record(span) for span in ordered]

    # -- the spans ----------------------------------------------------------------------

    def _root(self) -> _Open:
        session = self.session
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.kind,
            "gen_ai.agent.version": session["agent"]["version"],
            "gen_ai.conversation.id": self.session_id,
        }
        if self.provider:
            attributes["gen_ai.provider.name"] = self.provider
        if self.model:
            attributes["gen_ai.request.model"] = self.model
        attributes.update(_usage(session.get("metrics")))
        start = nanoseconds(session["started_at"])
        end = nanoseconds(session["ended_at"]) if "ended_at" in session else start
        return self._add(
            f"invoke_agent {self.kind}", span_id_of(self.session_id, "session", ""), None, start, end, attributes
        )

    def _turn(self, turn: Mapping[str, Any], root: int) -> int:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.conversation.id": self.session_id,
            "postrun.turn.id": turn["id"],
            "postrun.turn.index": turn["index"],
        }
        if "mode" in turn:
            attributes["postrun.turn.mode"] = turn["mode"]
        prompt = self._prompt(turn["id"], turn["actor_id"])
        if self.content and prompt is not None:
            message = [{"role": "user", "parts": [{"type": "text", "content": prompt}]}]
            attributes["gen_ai.input.messages"] = _json(message)
        start = nanoseconds(turn["started_at"])
        span = self._add(
            f"turn {turn['index']}", span_id_of(self.session_id, "turn", turn["id"]), root, start, start, attributes
        )
        return span.span_id

    def _helper(self, actor: Mapping[str, Any], parent: int, fallback_start: int) -> None:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.kind,
            "gen_ai.agent.id": actor["id"],
            "gen_ai.conversation.id": self.session_id,
            "postrun.actor.type": actor["type"],
        }
        if self.content and "label" in actor:
            attributes["gen_ai.agent.description"] = actor["label"]
        attributes.update(_usage(self.helper_metrics.get(actor["id"])))
        own = [nanoseconds(step["at"]) for step in self.steps if step["actor_id"] == actor["id"]]
        start = min(own) if own else fallback_start
        span_id = span_id_of(self.session_id, "actor", actor["id"])
        self._add(f"invoke_agent {self.kind}", span_id, parent, start, max(own, default=start), attributes)

    def _tool(self, step: Mapping[str, Any], parent: int, end_ns: int) -> None:
        name = _tool_name(step)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": step["id"],
            "gen_ai.tool.type": TOOL_TYPE,
            "gen_ai.conversation.id": self.session_id,
            "postrun.step.seq": step["seq"],
            "postrun.step.type": step["type"],
            "postrun.step.decision": step["decision"],
            "postrun.step.outcome": step["outcome"],
        }
        if step["actor_id"] != "root":
            attributes["gen_ai.agent.id"] = step["actor_id"]
        if step["flags"]:
            attributes["postrun.flags"] = tuple(sorted({flag["kind"] for flag in step["flags"]}))
        if self.content:
            arguments, result = _call_content(step)
            if arguments is not None:
                attributes["gen_ai.tool.call.arguments"] = _json(arguments)
            if result is not None:
                attributes["gen_ai.tool.call.result"] = _json(result)
        error_type = error_message = None
        if step["outcome"] == "failed":
            error = step.get("error") or {}
            error_type = error.get("type") or OTHER_ERROR
            attributes["error.type"] = error_type
            if self.content and error.get("message"):
                error_message = error["message"]
        start = nanoseconds(step["at"])
        span_id = span_id_of(self.session_id, "step", step["id"])
        span = self._add(f"execute_tool {name}", span_id, parent, start, max(start, end_ns), attributes)
        span.error_type, span.error_message = error_type, error_message

    # -- times --------------------------------------------------------------------------

    def _step_ends(self) -> dict[str, int]:
        """Each step's end: its actor's next later step's start, else the actor's last time
        (the root's: the session's end when it ended)."""
        by_actor: dict[str, list[Mapping[str, Any]]] = {}
        for step in self.steps:
            by_actor.setdefault(step["actor_id"], []).append(step)
        session_end = nanoseconds(self.session["ended_at"]) if "ended_at" in self.session else None
        ends: dict[str, int] = {}
        for actor_id, steps in by_actor.items():
            times = [nanoseconds(step["at"]) for step in steps]
            last = max(times)
            if actor_id == "root" and session_end is not None:
                last = max(last, session_end)
            for index, (step, start) in enumerate(zip(steps, times, strict=True)):
                later = (time for time in times[index + 1 :] if time > start)
                ends[step["id"]] = next(later, last)
        return ends

    def _settle_times(self) -> None:
        """Stretch every span to hold its children, the deepest first."""

        def depth(span: _Open) -> int:
            seen = 0
            while span.parent_id is not None and span.parent_id in self.by_id and seen <= len(self.open):
                span, seen = self.by_id[span.parent_id], seen + 1
            return seen

        for span in sorted(self.open, key=depth, reverse=True):
            parent = self.by_id.get(span.parent_id) if span.parent_id is not None else None
            if parent is not None:
                parent.start_ns = min(parent.start_ns, span.start_ns)
                parent.end_ns = max(parent.end_ns, span.end_ns)

    # -- helpers ------------------------------------------------------------------------

    def _add(
        self, name: str, span_id: int, parent: int | None, start: int, end: int, attributes: dict[str, AttributeValue]
    ) -> _Open:
        span = _Open(name, span_id, parent, start, max(start, end), attributes)
        self.open.append(span)
        self.by_id[span_id] = span
        return span

    def _record(self, span: _Open) -> SpanRecord:
        return SpanRecord(
            span.name,
            self.trace_id,
            span.span_id,
            span.parent_id,
            span.start_ns,
            span.end_ns,
            span.attributes,
            span.error_type,
            span.error_message,
        )

    def _prompt(self, turn_id: str, actor_id: str) -> str | None:
        for step in self.steps:
            if step["turn_id"] == turn_id and step["actor_id"] == actor_id and step["type"] == "message":
                payload = step["payload"]
                if payload["role"] == "user" and "text" in payload:
                    return str(payload["text"])
        return None


def _tool_name(step: Mapping[str, Any]) -> str:
    if step["type"] == "other":
        return str(step["payload"]["tool_name"])
    return str(step["type"])


def _call_content(step: Mapping[str, Any]) -> tuple[Any, Any]:
    """(arguments, result) of a tool step, as the conventions' objects; None: absent."""
    payload: Mapping[str, Any] = step["payload"]
    kind = step["type"]
    if kind == "command":
        arguments = {key: payload[key] for key in ("command", "cwd") if key in payload}
        result = {key: payload[key] for key in ("stdout", "stderr", "exit_code", "output_ref") if key in payload}
        return arguments or None, result or None
    if kind == "other":
        raw = payload["raw"]
        if isinstance(raw, dict) and ("input" in raw or "result" in raw):
            return raw.get("input"), raw.get("result")
        return raw, None
    # edit and read: the call's arguments are the whole payload; no result is recorded
    return dict(payload), None


def _usage(metrics: Mapping[str, Any] | None) -> dict[str, AttributeValue]:
    """Usage as the agent reported it (never estimated): the tokens, cost and request count."""
    if not metrics:
        return {}
    tokens = metrics.get("tokens") or {}
    usage: dict[str, AttributeValue] = {attribute: tokens[key] for key, attribute in _TOKENS if key in tokens}
    if "cost_usd" in metrics:
        usage["postrun.usage.cost_usd"] = float(metrics["cost_usd"])
    if "api_requests" in metrics:
        usage["postrun.usage.api_requests"] = metrics["api_requests"]
    return usage


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()
