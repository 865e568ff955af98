"""Reading a session's rollouts (from disk, or back from the vault's copies), and the first
lines that say which session a rollout is of."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from postrun.agents.codex.files import RolloutData, SessionFiles, decompressed, head, read_rollout
from postrun.agents.codex.layout import Rollout, SessionLocation
from postrun.agents.codex.lines import first_line
from postrun.agents.codex.locate import ARCHIVE, rollout_at, waiting_reason
from postrun.agents.codex.mapping import MappingCache
from postrun.agents.codex.meta import NOT_A_ROLLOUT, ThreadMeta, thread_meta
from postrun.appendonly import Appended
from postrun.errors import NotFound, SourceError
from postrun.records import RawFile

ITEM_EVENT = b'"item_completed"'  # in the bytes of a line that holds an item (``thread.is_item``)


def read_meta(rollout: Rollout, *, max_bytes: int) -> ThreadMeta | None:
    """The thread a rollout's ``session_meta`` describes; None while its first line is not
    written. Raises ``SourceError`` when it cannot be read, or its first line is written and
    is no ``session_meta`` (a line is written whole with its newline: a JSON line holds none)."""
    data = head(rollout, max_bytes=max_bytes)
    line = first_line(data)
    meta = thread_meta(line.payload, line.timestamp) if line is not None and line.type == "session_meta" else None
    if meta is None and data.endswith(b"\n"):
        raise SourceError(str(rollout.path), NOT_A_ROLLOUT)
    return meta


def read_metas(rollouts: Iterable[Rollout], *, max_bytes: int) -> tuple[dict[str, ThreadMeta], dict[str, SourceError]]:
    """Each readable rollout's thread, and why each of the others could not be read (both by
    thread id)."""
    metas: dict[str, ThreadMeta] = {}
    problems: dict[str, SourceError] = {}
    for rollout in rollouts:
        try:
            meta = read_meta(rollout, max_bytes=max_bytes)
        except NotFound:
            continue  # gone since it was listed
        except SourceError as exc:
            problems[rollout.thread_id] = exc
            continue
        if meta is not None:
            metas[rollout.thread_id] = meta
    return metas, problems


def read_session(
    location: SessionLocation,
    *,
    max_bytes: int,
    cache: MappingCache | None = None,
    admit: Callable[[str], None] | None = None,
) -> SessionFiles:
    """Read a session's rollouts, each from where ``cache``'s fold of it stopped when it still
    continues there. ``admit`` is given the session's workspace (its ``session_meta.cwd``;
    "" when unknown) before any rollout is read beyond its first line, and may refuse the
    session by raising. Raises ``SourceError`` when the root's rollout is missing or
    unusable; a child's that cannot be read is listed in ``SessionFiles.unread``."""
    if location.root is None:
        raise SourceError(str(location.where), waiting_reason(location))
    if admit is not None:
        admit(_workspace(location.root, cache, max_bytes))
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
    return SessionFiles(location, root, tuple(children), tuple(unread))


def _workspace(root: Rollout, cache: MappingCache | None, max_bytes: int) -> str:
    known = cache.threads.get(root.thread_id) if cache is not None else None
    if known is not None and known.meta is not None:
        return known.meta.cwd
    try:
        meta = read_meta(root, max_bytes=max_bytes)
    except NotFound:
        raise SourceError(str(root.path), "no such file") from None
    return meta.cwd if meta is not None else ""


def _read(rollout: Rollout, max_bytes: int, cache: MappingCache | None) -> RolloutData:
    if cache is None:
        return read_rollout(rollout, max_bytes=max_bytes)
    thread_id = rollout.thread_id
    data = read_rollout(rollout, max_bytes=max_bytes, mark=cache.mark_of(thread_id), seen=cache.seen.get(thread_id))
    fold = cache.threads.get(thread_id)
    read = data.read
    if (
        read.start > 0
        and fold is not None
        and fold.guessed_history
        and read.data.find(ITEM_EVENT, read.start - read.origin) >= 0
    ):
        # Its history lines were made steps for want of items; with items come, they are
        # not (codex.md §5.1: history only in a rollout with no item anywhere): fold it again whole.
        return read_rollout(rollout, max_bytes=max_bytes)
    return data


def kept_files(session_id: str, copies: Sequence[RawFile], *, max_bytes: int) -> SessionFiles | None:
    """A session's files parsed back from the vault's copies of its rollouts (each at the path
    it was read from); None when no copy is the rollout of a root thread of that id. A thread kept twice (a
    rollout Codex compressed or archived after it was copied) is read from its longer copy."""
    best: dict[str, RolloutData] = {}
    for copy in copies:
        path = Path(copy.fingerprint.path)
        rollout = rollout_at(path)
        if rollout is None:
            continue
        rollout = replace(rollout, name=copy.name, archived=Path(copy.name).parts[:1] == (ARCHIVE,))
        data = decompressed(copy.data, str(path), max_bytes) if rollout.compressed else copy.data
        read = RolloutData(rollout, Appended.whole(data, copy.fingerprint), copy.data)
        kept = best.get(rollout.thread_id)
        if kept is None or len(read.read.data) > len(kept.read.data):
            best[rollout.thread_id] = read
    root = best.pop(session_id, None)
    line = first_line(bytes(root.read.data[: root.read.data.find(b"\n") + 1])) if root is not None else None
    meta = thread_meta(line.payload, line.timestamp) if line is not None and line.type == "session_meta" else None
    if root is None or meta is None or meta.is_child:
        return None
    children = tuple(best[thread_id] for thread_id in sorted(best))
    location = SessionLocation(session_id, root.rollout, tuple(data.rollout for data in children))
    return SessionFiles(location, root, children)
