"""Reading a session's rollouts, and the first lines that say which session a rollout is of."""

from __future__ import annotations

from collections.abc import Iterable

from postrun.agents.codex.files import Rollout, RolloutData, SessionFiles, head, read_rollout
from postrun.agents.codex.lines import first_line
from postrun.agents.codex.locate import SessionLocation
from postrun.agents.codex.mapping import MappingCache
from postrun.agents.codex.meta import ThreadMeta, thread_meta
from postrun.errors import NotFound, SourceError


def read_meta(rollout: Rollout, *, max_bytes: int) -> ThreadMeta | None:
    """The thread a rollout's ``session_meta`` describes; None while its first line is not
    written (or is not a ``session_meta``). Raises ``SourceError`` when it cannot be read."""
    line = first_line(head(rollout, max_bytes=max_bytes))
    if line is None or line.type != "session_meta":
        return None
    return thread_meta(line.payload, line.timestamp)


def read_metas(rollouts: Iterable[Rollout], *, max_bytes: int) -> tuple[dict[str, ThreadMeta], list[SourceError]]:
    """Each readable rollout's thread (by thread id), and the rollouts that could not be read."""
    metas: dict[str, ThreadMeta] = {}
    problems: list[SourceError] = []
    for rollout in rollouts:
        try:
            meta = read_meta(rollout, max_bytes=max_bytes)
        except NotFound:
            continue  # gone since it was listed
        except SourceError as exc:
            problems.append(exc)
            continue
        if meta is not None:
            metas[rollout.thread_id] = meta
    return metas, problems


def read_session(location: SessionLocation, *, max_bytes: int, cache: MappingCache | None = None) -> SessionFiles:
    """Read a session's rollouts, each from where ``cache``'s fold of it stopped when it still
    continues there. Raises ``SourceError`` when the root's rollout is missing or unusable;
    a child's that cannot be read is listed in ``SessionFiles.unread``."""
    if location.root is None:
        raise SourceError(location.session_id, "only sub-agent rollouts so far; waiting for the session's own")
    root = _read(location.root, max_bytes, cache)
    children: list[RolloutData] = []
    unread: list[SourceError] = []
    for rollout in location.children:
        try:
            children.append(_read(rollout, max_bytes, cache))
        except NotFound:
            continue
        except SourceError as exc:
            unread.append(exc)
    return SessionFiles(root, tuple(children), tuple(unread))


def _read(rollout: Rollout, max_bytes: int, cache: MappingCache | None) -> RolloutData:
    since = cache.read_from(rollout.thread_id) if cache is not None else (0, b"")
    return read_rollout(rollout, max_bytes=max_bytes, since=since)
