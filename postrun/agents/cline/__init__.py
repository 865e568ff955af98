"""The Cline adapter: Cline's session files in, v1.2 records out.

Reading (``locate``, ``files``, ``approvals``) is I/O at the edge; ``map_session``
is pure and takes everything it needs as arguments.
"""

from __future__ import annotations

from postrun.agents.cline.approvals import approval_snapshot, decision_for
from postrun.agents.cline.files import SessionFiles, read_session, session_fingerprint
from postrun.agents.cline.locate import (
    Listing,
    SessionLocation,
    Skipped,
    is_safe_name,
    list_sessions,
    resolve_targets,
    session_id_for_event,
)
from postrun.agents.cline.mapping import AGENT, MappingCache, map_session

__all__ = [
    "AGENT",
    "Listing",
    "MappingCache",
    "SessionFiles",
    "SessionLocation",
    "Skipped",
    "approval_snapshot",
    "decision_for",
    "is_safe_name",
    "list_sessions",
    "map_session",
    "read_session",
    "resolve_targets",
    "session_fingerprint",
    "session_id_for_event",
]
