"""The Claude Code adapter: Claude Code's transcripts in, v1.2 records out.

Reading (``locate``, ``files``) is I/O at the edge; ``map_session`` is pure and takes
everything it needs as arguments. Transcripts only grow: each is read from where the last
read stopped and folded onto the state the last mapping left (``MappingCache``).

Where each Claude Code field is mapped (module.function)::

    <slug>/<id>.jsonl (the main transcript, one record a line)
      <id>                                locate.list_project      session.id
      its folder (the slug folder)        mapping._session         session.source
      version (first message record)      fold._Work.take          session.agent.version
      cwd, gitBranch (first user line)    fold._Work._user         session.workspace.root; branch column
      timestamp (every record)            fold._Work._time         session.started_at (earliest), ended_at
                                                                   (latest, when a cost-state is last); segment times
      cost-state                          fold._Work._cost_state   segments (the next timestamped record resumes);
                                                                   session.metrics.cost_usd (the last one)
      queue-operation enqueue, then a     fold._Work._message_line a segment (resume) after a killed invocation
        repair (an interrupted result,
        a <synthetic> assistant line)
      assistant message.id, usage         fold._Work._usage        metrics.api_requests, tokens (once per id;
                                                                   not <synthetic> lines: Claude Code's own;
                                                                   not a fork's copies: requestSessionId)
      assistant message.model             fold._Work._assistant    model column; <synthetic>: system messages
      assistant text / thinking blocks    blocks.pieces            message steps (assistant, thinking), runs joined
      assistant other blocks              blocks.pieces            other steps, tool_name block:<type>
      assistant tool_use                  fold._Work._call         command, read, edit and other steps (tools.call_step)
      user prompt (text.is_prompt)        fold._Work._user         turns (promptId, permissionMode); user messages
      user lines Claude Code injected     fold._Work._user         system messages (notices, /compact, summaries)
      tool_result, toolUseResult          fold._Work._answer       outcome, output, exit code, patch, range (tools)
      permissionDecision, toolDenialKind  results.decision, outcome  step decision, error type
      Read results                        tools.read_text          MappedSession.read_texts (scanned, never stored)
      every other record kind             fold._Work.take          nothing (skipped)
    <id>/subagents/agent-<id>.jsonl       fold (same rules)        sub-agent actors' steps, after the spawning step
    <id>/subagents/agent-<id>.meta.json   place.spawn_links        the spawning step (place.plan); actor label
    <id>/tool-results/*                   files.read_session       raw copies for the vault only
    <slug>/agent-<id>.jsonl (before 2.1)  strays.old_subagents     a sub-agent of the session its sessionId names
"""

from __future__ import annotations

from postrun.agents.claude_code.files import ReadFrom, SessionFiles, Subagent, read_session
from postrun.agents.claude_code.locate import (
    AGENT,
    SessionLocation,
    is_safe_name,
    list_sessions,
    location_for_event,
    projects_root,
    resolve_targets,
)
from postrun.agents.claude_code.mapping import MappingCache, map_session, read_from

__all__ = [
    "AGENT",
    "MappingCache",
    "ReadFrom",
    "SessionFiles",
    "SessionLocation",
    "Subagent",
    "is_safe_name",
    "list_sessions",
    "location_for_event",
    "map_session",
    "projects_root",
    "read_from",
    "read_session",
    "resolve_targets",
]
