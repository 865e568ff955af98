"""Edits written as text: ``apply_patch`` patches and legacy ``replace_in_file`` diffs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_BEGIN = "*** Begin Patch"
_END = "*** End Patch"
_SECTION = re.compile(r"\*\*\* (?P<action>Add|Update|Delete) File: (?P<path>.*\S)\s*")
_SEARCH = re.compile(r"(?:<{3,}|-{3,}) SEARCH\s*")
_DIVIDER = re.compile(r"={3,}\s*")
_REPLACE = re.compile(r"(?:>{3,}|\+{3,}) REPLACE\s*")


@dataclass(slots=True)
class FilePatch:
    """One file section of a patch; line lists are filled while parsing."""

    action: str  # "Add", "Update" or "Delete"
    path: str
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    def edit_payload(self) -> dict[str, object]:
        payload: dict[str, object] = {"path": self.path, "is_full_write": self.action == "Add"}
        if self.action == "Update":
            payload["old_string"] = _joined(self.removed)
        if self.action != "Delete":
            payload["new_string"] = _joined(self.added)
        return payload


def _joined(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def parse_patch(text: str) -> list[FilePatch] | None:
    """The file sections of a ``*** Begin Patch`` text; None when it has none."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == _BEGIN)
    except StopIteration:
        return None
    sections: list[FilePatch] = []
    for line in lines[start + 1 :]:
        if line.strip() == _END:
            break
        header = _SECTION.fullmatch(line)
        if header is not None:
            sections.append(FilePatch(header["action"], header["path"]))
        elif sections and line.startswith("+"):
            sections[-1].added.append(line[1:])
        elif sections and line.startswith("-"):
            sections[-1].removed.append(line[1:])
        # context lines, "@@" hunk headers and "*** Move to:" change no text
    return sections or None


def parse_search_replace(diff: str) -> tuple[str, str] | None:
    """The searched and replacing text of ``SEARCH``/``REPLACE`` blocks; None without any."""
    searched: list[list[str]] = []
    replacing: list[list[str]] = []
    state = "outside"
    for line in diff.splitlines():
        if state == "outside" and _SEARCH.fullmatch(line):
            searched.append([])
            state = "search"
        elif state == "search" and _DIVIDER.fullmatch(line):
            replacing.append([])
            state = "replace"
        elif state == "replace" and _REPLACE.fullmatch(line):
            state = "outside"
        elif state == "search":
            searched[-1].append(line)
        elif state == "replace":
            replacing[-1].append(line)
    if not replacing:
        return None
    return (
        "\n".join("\n".join(block) for block in searched[: len(replacing)]),
        "\n".join("\n".join(block) for block in replacing),
    )
