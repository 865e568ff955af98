"""The MCP server over stdio (the official SDK's ``MCPServer``): five read-only tools.

The tools' input schemas come from the signatures below, their output schemas from the
answer models. A bad parameter (out of range, unknown, malformed) is a tool error with a
one-line reason; nothing a caller sends stops the server.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import Field, ValidationError

from postrun import __version__
from postrun.errors import PostrunError
from postrun.recall import bounds
from postrun.recall.models import FileHistory, SearchResult, SessionList, SessionOverview, StepsPage
from postrun.recall.tools import Recall
from postrun.text import one_line

INSTRUCTIONS = (
    "Postrun's record of what coding agents (this one and others) did in earlier sessions on this machine:"
    " prompts, commands and their output, edits, reads and replies. Search it before redoing work"
    " (`search`), read a session's steps around a hit (`get_steps`), see who last touched a file"
    " (`file_history`). Secrets are masked; sessions active in the last 10 minutes (yours) are left out"
    " of search and file_history unless include_active is true. Cite hits by their `show` or `url`."
)
_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

_WORD = bounds.ARGUMENT_CHARS
Agent = Annotated[
    str | None, Field(max_length=_WORD, description="Only this agent's sessions: cline, claude-code, codex, …")
]
Workspace = Annotated[
    str | None, Field(max_length=bounds.PATH_CHARS, description="Only sessions of this workspace root (a path).")
]
Since = Annotated[
    str | None, Field(max_length=_WORD, description="Only from this date on: 2026-11-29 or an ISO date-time.")
]
IncludeActive = Annotated[
    bool, Field(description="Also sessions active in the last 10 minutes (your own current one among them).")
]
Seq = Annotated[int | None, Field(ge=0, le=bounds.MAX_SEQ)]
# At least one character: an empty prefix names every session (and the only one, alone).
SessionId = Annotated[
    str, Field(min_length=1, max_length=_WORD, description="A session id, or a unique prefix of one.")
]


def _limit(default_most: tuple[int, int], what: str) -> Any:
    default, most = default_most
    return Field(default=default, ge=1, le=most, description=f"At most this many {what} (1 to {most}).")


class _RecallServer(MCPServer[Any]):
    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            # The SDK's message lists every error on lines of their own: one line, the first named.
            errors = cause.errors(include_url=False)
            where = ".".join(str(part) for part in errors[0]["loc"]) or "arguments"
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            raise ToolError(f"Error executing tool {name}: bad parameter {where}: {errors[0]['msg']}{more}") from None


@contextlib.contextmanager
def _reasons(recall: Recall) -> Iterator[None]:
    """A library error becomes the tool error the caller reads (the SDK hides any other),
    redacted as every answer is (README: "your home folder is ~"; it names the store's file)."""
    try:
        yield
    except PostrunError as exc:
        raise ToolError(one_line(recall.shown(str(exc)), 500)) from None


def build_server(recall: Recall) -> MCPServer[Any]:
    server = _RecallServer("postrun", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(annotations=_READ_ONLY)
    def search(
        query: Annotated[
            str,
            Field(
                max_length=bounds.QUERY_CHARS,
                description="Words to find (every word must match) in commands, output, edits…",
            ),
        ],
        agent: Agent = None,
        workspace: Workspace = None,
        outcome: Annotated[Literal["ok", "failed"] | None, Field(description="Only steps that ended so.")] = None,
        flag: Annotated[
            str | None, Field(max_length=_WORD, description="Only steps with this risk flag kind (or any).")
        ] = None,
        since: Since = None,
        limit: Annotated[int, _limit(bounds.SEARCH_LIMIT, "hits")] = bounds.SEARCH_LIMIT[0],
        include_active: IncludeActive = False,
    ) -> SearchResult:
        """Find earlier steps of any agent's sessions by their words: the best among the newest
        5,000 matches first, then older matches, newest first."""
        with _reasons(recall):
            return recall.search(
                query,
                agent=agent,
                workspace=workspace,
                outcome=outcome,
                flag=flag,
                since=since,
                limit=limit,
                include_active=include_active,
            )

    @server.tool(annotations=_READ_ONLY)
    def list_sessions(
        agent: Agent = None,
        workspace: Workspace = None,
        since: Annotated[
            str | None, Field(max_length=_WORD, description="Only sessions started on or after this date.")
        ] = None,
        limit: Annotated[int, _limit(bounds.SESSIONS_LIMIT, "sessions")] = bounds.SESSIONS_LIMIT[0],
    ) -> SessionList:
        """List recorded sessions, newest first."""
        with _reasons(recall):
            return recall.list_sessions(agent=agent, workspace=workspace, since=since, limit=limit)

    @server.tool(annotations=_READ_ONLY)
    def get_session(session_id: SessionId) -> SessionOverview:
        """One session's overview: title, agent, workspace, usage, its turns' prompts, helpers, counts."""
        with _reasons(recall):
            return recall.get_session(session_id)

    @server.tool(annotations=_READ_ONLY)
    def get_steps(
        session_id: SessionId,
        around_seq: Annotated[Seq, Field(description="Steps around this seq (a search hit's).")] = None,
        from_seq: Annotated[Seq, Field(description="Steps from this seq on.")] = None,
        limit: Annotated[int, _limit(bounds.STEPS_LIMIT, "steps")] = bounds.STEPS_LIMIT[0],
        max_chars: Annotated[
            int,
            Field(
                ge=bounds.STEP_CHARS[1],
                le=bounds.STEP_CHARS[2],
                description="Each text field is cut to this many characters, with a marker.",
            ),
        ] = bounds.STEP_CHARS[0],
    ) -> StepsPage:
        """A session's steps in order, whole (payload included) but for texts cut to max_chars."""
        with _reasons(recall):
            return recall.get_steps(
                session_id, around_seq=around_seq, from_seq=from_seq, limit=limit, max_chars=max_chars
            )

    @server.tool(annotations=_READ_ONLY)
    def file_history(
        path: Annotated[
            str,
            Field(max_length=bounds.PATH_CHARS, description="The file: an absolute path, or relative to workspace."),
        ],
        workspace: Annotated[
            str | None, Field(max_length=bounds.PATH_CHARS, description="The folder a relative path is in.")
        ] = None,
        limit: Annotated[int, _limit(bounds.HISTORY_LIMIT, "steps")] = bounds.HISTORY_LIMIT[0],
        include_active: IncludeActive = False,
    ) -> FileHistory:
        """The steps that edited, read or ran a command naming a file, newest first."""
        with _reasons(recall):
            return recall.file_history(path, workspace=workspace, limit=limit, include_active=include_active)

    return server


def serve_stdio(recall: Recall) -> None:
    """Answer one client over stdin and stdout until it hangs up, or until Ctrl-C."""
    # Ctrl-C ends the process at once, as SIGTERM does: a KeyboardInterrupt stopped serving but
    # then waited on the thread blocked reading stdin, until the client hung up. Nothing is
    # written (the server is read-only), so there is nothing to finish.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # A client that stopped reading ends it the same way, as SIGPIPE ends `| head`'s writer
    # (README's exit 141, quiet): the broken pipe failed the writer, and the server then waited
    # on that same stdin reader, then ended with an internal error.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    build_server(recall).run("stdio")
