"""``postrun doctor``'s check of Codex: its sessions folder, and the archive beside it, can be listed.

A folder capture cannot list hides every session in it, so it is named (a warning, as every
agent's folder but Cline's: README, `postrun doctor`), not counted as "0 sessions".
"""

from __future__ import annotations

import stat
from pathlib import Path

from postrun.agents.codex.locate import ARCHIVE
from postrun.agents.registry import UNLISTED_HINT, AgentCheck, Listing, unlisted
from postrun.text import plural

NAME = "codex sessions"
_ABSENT_HINT = "has Codex run on this machine? Otherwise set codex_dir (or POSTRUN_CODEX_DIR, or CODEX_HOME)"


def root_problem(root: Path) -> AgentCheck | None:
    """Why ``root`` is no sessions folder to list (None: it is a folder)."""
    try:
        mode = root.stat().st_mode
    except FileNotFoundError:
        return AgentCheck(NAME, "warn", f"{root}: no such folder", _ABSENT_HINT)
    except OSError as exc:
        return AgentCheck(NAME, "warn", f"{root}: cannot use: {exc.strerror or exc}", UNLISTED_HINT)
    if not stat.S_ISDIR(mode):
        return AgentCheck(NAME, "warn", f"{root}: not a folder", _ABSENT_HINT)
    return None


def listed_check(root: Path, listing: Listing) -> AgentCheck:
    """The sessions found, or the folders (the root, the archive, a day's folder) that could not be listed."""
    count = len(listing.sessions)
    sessions = plural(count, "session", grouped=False)
    refused = [entry for entry in listing.skipped if unlisted(entry.reason)]
    if not refused:
        return AgentCheck(NAME, "ok", f"{sessions} in {root} (and {ARCHIVE} beside it)", sessions=count)
    first = refused[0]
    more = f" (and {len(refused) - 1} more folders)" if len(refused) > 1 else ""
    detail = (
        f"{ascii(str(first.path))[1:-1]}: {first.reason}{more}; the sessions there are not recorded ({sessions} found)"
    )
    return AgentCheck(NAME, "warn", detail, UNLISTED_HINT, sessions=count)
