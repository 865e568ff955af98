"""The Cline adapter: Cline's session files in, v1.2 records out.

Reading (``locate``, ``files``, ``approvals``) is I/O at the edge; ``map_session``
is pure and takes everything it needs as arguments.

Where each Cline field is mapped (module.function)::

    <id>/<id>.json (the manifest)
      started_at                   mapping._started_at      session.started_at
      ended_at, status             mapping.map_session      session.ended_at; status of calls left unanswered
      workspace_root, cwd          mapping._session_record  session.workspace.root (cwd also tools' cwd)
      metadata.git.url             mapping._session_record  session.workspace.repo
      metadata.sessionHistoryOrigin.version, origin.version  mapping._session_record  session.agent.version
      model, provider, status, metadata.title, metadata.git.branch  mapping._extras  stored columns
      metadata.checkpoint.history[].runCount, createdAt  segments.plan_segments  segments
    <id>.messages.json (the messages file)
      version, agent               mapping._session_record, map_session  agent.format_version, root actor label
      messages[].role, id, ts, content  transcript.read_transcript  messages (ts: timestamps.epoch_ms)
      messages[].metrics, modelInfo     transcript._note_facts       session.metrics, model fallback
      content[] text / thinking    steps.map_message        turns (user), message and reasoning steps
      user text wrappers, displayRole, metadata.kind  text.unwrap, text.is_synthetic  prompts, synthetic turns
      content[] tool_use name, input    tools.map_tool_call  tool steps (inputs.requests_of for batches)
      run_commands command / result     commands.render_command, parse_command_result  command, exit code, output
      editor / apply_patch input        tools._editor_payload, _apply_patch, patch.parse_patch  edits
      tool_result content, is_error     results.read_result, error_reports  step output, status, error
    settings and globalState.json  approvals.approval_snapshot, decision_for  step approval decisions
"""

from __future__ import annotations

from postrun.agents.cline.approvals import approval_snapshot, approval_source, decision_for, snapshot_from_settings
from postrun.agents.cline.files import SessionFiles, parse_session, read_session, session_fingerprint
from postrun.agents.cline.locate import (
    SessionLocation,
    is_safe_name,
    list_sessions,
    resolve_targets,
    session_id_for_event,
)
from postrun.agents.cline.mapping import AGENT, MappingCache, map_session, workspace_root
from postrun.agents.registry import Listing, Skipped

__all__ = [
    "AGENT",
    "Listing",
    "MappingCache",
    "SessionFiles",
    "SessionLocation",
    "Skipped",
    "approval_snapshot",
    "approval_source",
    "decision_for",
    "is_safe_name",
    "list_sessions",
    "map_session",
    "parse_session",
    "read_session",
    "resolve_targets",
    "session_fingerprint",
    "session_id_for_event",
    "snapshot_from_settings",
    "workspace_root",
]
