"""Whether a step names a file: the rules of ``file_history`` (pure).

An edit or a read names the file its path resolves to (a relative path against the
session's workspace). A command names it when its text holds the file's absolute path, or its
path relative to the folder the command ran in, as a whole word of a path: ``src/app.py``
names ``<cwd>/src/app.py`` but neither ``src/app.pyc`` nor ``lib/src/app.py``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from postrun.errors import UsageError

# What may stand right before or after a path inside a command line and still end it.
_BEFORE = r"(?<![\w.~/-])"
_AFTER = r"(?![\w/-]|\.\w)"


def target_path(path: str, workspace: str | None) -> str:
    """The absolute, normalized path ``file_history`` looks for (UsageError when it cannot tell)."""
    if not path.strip():
        raise UsageError("path", "empty path")
    if not posixpath.isabs(path):
        if not workspace:
            raise UsageError("path", f"{path!r} is relative: give an absolute path, or the workspace it is in")
        if not posixpath.isabs(workspace):
            raise UsageError("workspace", f"{workspace!r} is not an absolute path")
        path = posixpath.join(workspace, path)
    return posixpath.normpath(path)


def index_phrase(target: str) -> str:
    """An FTS5 phrase every step naming ``target`` holds: its file name's words, in order."""
    words = re.findall(r"\w+", posixpath.basename(target))
    if not words:
        raise UsageError("path", f"{target!r} names no file")
    return '"' + " ".join(words) + '"'


def names_path(step: Mapping[str, Any], target: str, workspace: str) -> bool:
    payload = step.get("payload") or {}
    kind = step.get("type")
    if kind in ("edit", "read"):
        path = payload.get("path")
        return isinstance(path, str) and _resolved(path, workspace) == target
    if kind == "command":
        command = payload.get("command")
        cwd = payload.get("cwd")
        return isinstance(command, str) and _command_names(command, target, cwd if isinstance(cwd, str) else workspace)
    return False


def _resolved(path: str, base: str) -> str:
    return posixpath.normpath(path if posixpath.isabs(path) or not base else posixpath.join(base, path))


def _command_names(command: str, target: str, cwd: str) -> bool:
    forms = [target]
    if cwd and posixpath.isabs(cwd) and target.startswith(cwd.rstrip("/") + "/"):
        forms.append(posixpath.relpath(target, cwd))
    return any(re.search(_BEFORE + r"(?:\./)?" + re.escape(form) + _AFTER, command) for form in forms)
