"""The Claude Code adapter: Claude Code's transcripts in, v1.2 records out.

Reading (``locate``, ``files``) is I/O at the edge; ``map_session`` is pure and takes
everything it needs as arguments.
"""

from __future__ import annotations

from postrun.agents.claude_code.files import ReadFrom, SessionFiles, Subagent, read_session
from postrun.agents.claude_code.locate import (
    Listing,
    SessionLocation,
    Skipped,
    is_safe_name,
    list_sessions,
    location_for_event,
    projects_root,
    resolve_targets,
)
from postrun.agents.claude_code.mapping import AGENT, MappingCache, map_session, read_from

__all__ = [
    "AGENT",
    "Listing",
    "MappingCache",
    "ReadFrom",
    "SessionFiles",
    "SessionLocation",
    "Skipped",
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
