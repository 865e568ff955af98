"""How much a recall answer holds, and the cuts that keep it there (pure)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

# Counts: (default, most) of each tool's ``limit``.
SEARCH_LIMIT = (10, 50)
SESSIONS_LIMIT = (20, 100)
STEPS_LIMIT = (20, 100)
HISTORY_LIMIT = (20, 100)
# ``get_steps``' ``max_chars``: each text field of a step is cut there (default, least, most).
STEP_CHARS = (2_000, 100, 20_000)
# What one ``get_steps`` answer holds at most, all steps' texts together as JSON writes them
# (``json_chars``): past it, the answer stops at the step before and says where to go on.
STEPS_BUDGET_CHARS = 200_000
# What a caller may send: a query, a path, any other word (an id, a kind, a date).
QUERY_CHARS = 1_000
PATH_CHARS = 4_096
ARGUMENT_CHARS = 200
# The highest seq a caller may name: SQLite's integers are 64-bit, a larger one cannot be bound.
MAX_SEQ = 2**63 - 1
SNIPPET_CHARS = 300
TITLE_CHARS = 200
PROMPT_CHARS = 500
COMMAND_CHARS = 500
EDIT_CHARS = 1_000
TURNS_SHOWN = 200
ACTORS_SHOWN = 100
# Search ranks the newest this many matches (as the review app does); when they hold fewer
# hits than asked in scope, the newest in scope of this many older matches follow.
SEARCH_WINDOW = 5_000
SEARCH_OLDER = 20_000
# Steps a search reads at most to answer: more than it shows when some were found only inside
# secrets, which are left out.
SEARCH_FETCHED = 4 * (SEARCH_LIMIT[1] + 1)
# ``file_history`` reads at most this many candidate steps (those whose text holds the name).
HISTORY_CANDIDATES = 20_000
# A session with a start, a step or an end this recently is the asking agent's own, as a rule.
ACTIVE_WINDOW = timedelta(minutes=10)


# Characters JSON writes as two (``\n``, ``\"``) or as six (``\u001b``) inside a string.
_JSON_TWO = re.compile('["\\\\\b\f\n\r\t]')
_JSON_SIX = re.compile("[\x00-\x07\x0b\x0e-\x1f]")


def json_chars(text: str) -> int:
    """The characters of ``text`` as a JSON string holds it (its quotes left out): what an answer
    sends, where a terminal's escapes (``\x1b``) take six each."""
    return len(text) + len(_JSON_TWO.findall(text)) + 5 * len(_JSON_SIX.findall(text))


def cut(text: str, limit: int) -> str:
    """``text`` whole when it fits, else its first ``limit`` characters and a marker saying how much is left."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text) - limit:,} more characters]"


def cut_strings(value: Any, limit: int) -> tuple[Any, int]:
    """``value`` (a JSON-like tree) with every string cut at ``limit``; and how many were cut."""
    if isinstance(value, str):
        return cut(value, limit), int(len(value) > limit)
    if isinstance(value, Mapping):
        pairs = [(key, cut_strings(item, limit)) for key, item in value.items()]
        return {key: item for key, (item, _) in pairs}, sum(count for _, (_, count) in pairs)
    if isinstance(value, list):
        items = [cut_strings(item, limit) for item in value]
        return [item for item, _ in items], sum(count for _, count in items)
    return value, 0


def fit(value: Any, budget: int) -> tuple[Any, int]:
    """``value`` (a JSON-like tree, its strings already cut) kept to about ``budget`` characters
    (strings, keys and other values by their length): once they are spent, a list's further
    items and a nested object's further keys are left out with a marker saying how many (the
    top object keeps every key: a payload's own fields, its path or exit code, stay); and how
    many lists and objects were cut. Cutting each string is not enough: a structured patch of
    a large file is a list of many short lines."""
    left = budget

    def walk(item: Any, top: bool = False) -> tuple[Any, int]:
        nonlocal left
        if isinstance(item, Mapping):
            kept: dict[str, Any] = {}
            cuts = 0
            # Plain values first, lists and objects after: a hunk keeps its line numbers.
            for key, inner in sorted(item.items(), key=lambda pair: isinstance(pair[1], (Mapping, list))):
                if left <= 0 and not top:
                    break
                left -= len(key)
                kept[key], count = walk(inner)
                cuts += count
            shown = {key: kept[key] for key in item if key in kept}
            if len(kept) == len(item):
                return shown, cuts
            return shown | {"…": f"[cut: {len(item) - len(kept):,} more keys]"}, cuts + 1
        if isinstance(item, list):
            items: list[Any] = []
            cuts = 0
            for inner in item:
                if left <= 0:
                    items.append(f"… [cut: {len(item) - len(items):,} more items]")
                    return items, cuts + 1
                inner, count = walk(inner)
                items.append(inner)
                cuts += count
            return items, cuts
        left -= json_chars(item) if isinstance(item, str) else len(str(item))
        return item, 0

    return walk(value, top=True)


def page_span(size_of: Callable[[int], int], first: int, count: int, *, around: bool) -> range:
    """The indexes of a page of ``count`` items that holds item ``first``: grown from it, after it
    (and before it too when ``around``), while their sizes (``size_of``) together fit
    ``STEPS_BUDGET_CHARS``; ``first`` is on it whatever its size."""
    if not count:
        return range(0)
    low = high = first
    used = size_of(first)
    ways = [-1, 1] if around else [1]
    while ways:
        for way in list(ways):
            index = low - 1 if way < 0 else high + 1
            if 0 <= index < count and used + size_of(index) <= STEPS_BUDGET_CHARS:
                used += size_of(index)
                low, high = min(low, index), max(high, index)
            else:
                ways.remove(way)
    return range(low, high + 1)


def text_size(value: Any) -> int:
    """The characters of every string in a JSON-like tree as JSON writes them (what a budget counts)."""
    if isinstance(value, str):
        return json_chars(value)
    if isinstance(value, Mapping):
        return sum(text_size(item) for item in value.values())
    if isinstance(value, list):
        return sum(text_size(item) for item in value)
    return 0
