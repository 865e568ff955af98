"""The Codex adapter: Codex CLI's rollout files in, v1.2 records out.

Finding and reading (``locate``, ``files``) is I/O at the edge; ``map_session`` is pure and
folds each rollout's lines, resuming from its ``MappingCache`` when a rollout only grew.
Codex's SQLite files are never opened: the rollout is the source of truth.

Where each Codex field is mapped (module.function)::

    file name rollout-<time>-<thread id>.jsonl[.zst]   locate.rollout_at       thread id, compressed
    session_meta (first line)
      id, session_id, parent_thread_id, source.subagent  meta.thread_meta     session id; child of a session
      timestamp, cwd, cli_version, git.repository_url    session.session_record  started_at, workspace, agent.version
      model_provider, git.branch                         session.extras       stored columns
      agent_nickname, source.subagent.other=guardian     session.actor_records  actor label
    event_msg task_started (turn_id, root_turn_id, turn_attribution.parent_turn_id, collaboration_mode_kind)
                                                         thread._task_started  turns, where a child's steps go
    event_msg thread_settings_applied then task_started  thread._task_started  a resume: a new segment
    event_msg task_complete / turn_aborted               thread._event          ended_at; calls left without a result
    turn_context approval_policy, cwd, model             thread._turn_context   decisions, a call's cwd, model
    event_msg item_completed (turn_id, started_at_ms, item)  thread._item      the facts: one entry per id
      UserMessage, AgentMessage, Reasoning, ContextCompaction  items.item_parts  message steps (user opens a turn)
      CommandExecution command, cwd, exit_code, aggregated_output, status  items._command  command steps
      FileChange changes{path: add/update/delete}        items._file_change     one edit step per change
      CollabAgentToolCall, WebSearch, any other item     items._collab, _other  other steps; spawn -> actor_id
    compacted.message                                    thread.fold            a compaction step's text
    response_item function_call / custom_tool_call / local_shell_call + function_call_output
                                                         thread._call, calls.call_parts  a call no item describes
    response_item message / reasoning / web_search_call  thread._message, history.history_parts
                                                         steps of a rollout without items; else ordering only
    token_usage_record usage (by thread_id, response_id)  usage.Usage.count    session and helper metrics
    decisions (Codex writes none)                        calls.decision         from the policy and the call
    child rollouts' steps                                placing.session_order  after the step that started them
"""

from __future__ import annotations

from postrun.agents.codex.files import RolloutData, SessionFiles, read_rollout
from postrun.agents.codex.layout import Rollout, SessionLocation
from postrun.agents.codex.locate import (
    Rollouts,
    archive_folder,
    group_sessions,
    list_rollouts,
    rollout_at,
    sessions_folder,
)
from postrun.agents.codex.mapping import MappingCache, map_session
from postrun.agents.codex.meta import ThreadMeta, thread_meta
from postrun.agents.codex.session import AGENT

__all__ = [
    "AGENT",
    "MappingCache",
    "Rollout",
    "RolloutData",
    "Rollouts",
    "SessionFiles",
    "SessionLocation",
    "ThreadMeta",
    "archive_folder",
    "group_sessions",
    "list_rollouts",
    "map_session",
    "read_rollout",
    "rollout_at",
    "sessions_folder",
    "thread_meta",
]
