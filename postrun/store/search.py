"""Full-text search over the steps: the checked query, and the best matches (or the flagged steps).

Every word must match; words are quoted, so FTS5 operators in them are plain text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from postrun.errors import UsageError
from postrun.store.db import MAX_INTEGER, Database
from postrun.text import as_stored, one_line
from postrun.timestamps import normalize_timestamp


@dataclass(frozen=True, slots=True)
class SearchHit:
    session_id: str
    step_id: str
    seq: int
    at: str
    type: str
    outcome: str
    snippet: str
    actor_id: str  # who did it: ``root`` (the lead) or a helper's actor id
    actor_label: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "step_id": self.step_id,
            "seq": self.seq,
            "at": self.at,
            "type": self.type,
            "outcome": self.outcome,
            "snippet": self.snippet,
            "actor_id": self.actor_id,
            "actor_label": self.actor_label,
        }


STEP_TYPES = ("command", "edit", "read", "message", "other")
_WORD = re.compile(r"\S+")
_TOKEN = re.compile(r"[^\W_]+")  # what the index's unicode61 tokenizer makes a term of


def query_words(text: str) -> list[str]:
    """The words of a query as the search matches them, each a phrase of its terms."""
    # A NUL would end the FTS5 query string inside a quoted word: it separates words instead.
    # Bytes that are not UTF-8 are searched as the store keeps them (U+FFFD): SQLite takes text only.
    return _WORD.findall(as_stored(text).replace("\x00", " "))


def index_terms(text: str) -> str:
    """The terms the index makes of ``text``, each between two NULs (a phrase is then a
    substring): unicode61 with ``remove_diacritics 2`` keeps runs of letters and digits, in
    lower case, their diacritics dropped."""
    plain = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    return "\x00" + "\x00".join(_TOKEN.findall(plain.lower())) + "\x00"


def holds_phrase(terms: str, word: str) -> bool:
    """Whether ``terms`` (``index_terms``) hold ``word``'s terms in a row, as the index matches
    a quoted word (a word of no terms is held anywhere)."""
    phrase = index_terms(word)
    return phrase == "\x00\x00" or phrase in terms


def bounded_words(text: str, max_terms: int) -> tuple[str, list[str]]:
    """The first words of ``text`` (each once) that hold at most ``max_terms`` index terms in
    all, and the words left out: every term costs a pass over its list of steps."""
    kept: list[str] = []
    left_out: list[str] = []
    seen: set[str] = set()
    terms = 0
    for word in _WORD.findall(text):
        if word.casefold() in seen:
            continue
        seen.add(word.casefold())
        size = len(_TOKEN.findall(word))
        if left_out or terms + size > max_terms:
            left_out.append(word)
            continue
        terms += size
        kept.append(word)
    return " ".join(kept), left_out


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A validated ``postrun search``: FTS5 match text and filters."""

    match: str  # empty: no words, every step the filters keep is listed, newest first
    step_type: str | None = None
    failed: bool = False
    since_utc: str | None = None
    flag: str | None = None  # a flag kind, or "any"
    agent: str | None = None  # only this agent's sessions


def search_query(
    text: str,
    *,
    step_type: str | None = None,
    failed: bool = False,
    since: str | None = None,
    flag: str | None = None,
    agent: str | None = None,
) -> SearchQuery:
    """Check the user's words and filters (UsageError when one is wrong).

    Every word must match; words are quoted, so FTS5 operators in them are plain text.
    Without words, a filter alone is the search: the flagged, failed, typed or recent steps.
    """
    words = query_words(text)
    if not words and flag is None and not failed and step_type is None and since is None and agent is None:
        raise UsageError(
            "QUERY", "empty search query: give words, or a filter (--flag, --failed, --type, --since, --agent)"
        )
    if step_type is not None and step_type not in STEP_TYPES:
        raise UsageError("--type", f"unknown step type {step_type!r} (known: {', '.join(STEP_TYPES)})")
    match = " ".join('"' + word.replace('"', '""') + '"' for word in words)
    return SearchQuery(match, step_type, failed, since_utc(since) if since else None, flag, agent)


# The step's actor and its label (a helper's task or name).
_ACTOR_COLUMNS = "json_extract(postrun_record(st.record), '$.actor_id'), json_extract(a.record, '$.label')"
_ACTOR_JOIN = (
    "LEFT JOIN actors a ON a.session_id = st.session_id"
    " AND a.id = json_extract(postrun_record(st.record), '$.actor_id')"
)
_HAS_FLAG_SQL = """
    (?7 IS NULL OR EXISTS (SELECT 1 FROM step_flags f
                            WHERE f.session_id = st.session_id AND f.step_id = st.id AND (?7 = 'any' OR f.kind = ?7)))
"""
_OF_AGENT_SQL = "(?8 IS NULL OR st.session_id IN (SELECT id FROM sessions WHERE agent = ?8))"
# Without words: the flagged steps, newest first, each with the reasons of its flags as the snippet.
_FLAGGED_SQL = f"""
    SELECT st.session_id, st.id, st.seq, st.at, st.type, st.outcome,
           (SELECT group_concat(json_extract(j.value, '$.severity') || ' ' || json_extract(j.value, '$.kind')
                                || ': ' || json_extract(j.value, '$.reason'), ' | ')
              FROM json_each(postrun_record(st.record), '$.flags') j
             WHERE ?7 = 'any' OR json_extract(j.value, '$.kind') = ?7),
           {_ACTOR_COLUMNS}
      FROM steps st
      {_ACTOR_JOIN}
     WHERE ?1 = ''
       AND st.rowid IN (SELECT fs.rowid FROM step_flags f
                          JOIN steps fs ON fs.session_id = f.session_id AND fs.id = f.step_id
                         WHERE ?7 = 'any' OR f.kind = ?7)
       AND (?2 IS NULL OR st.type = ?2)
       AND (?3 = 0 OR st.outcome = 'failed')
       AND (?4 IS NULL OR st.at >= ?4)
       AND {_OF_AGENT_SQL}
     ORDER BY st.at DESC, st.session_id, st.seq
     LIMIT ?5
"""
# Without words or flag: the steps the filters keep, newest first, each with its flags'
# reasons (a failed step has one) or the start of its text. The newest are picked by their
# plain columns first: the records are decompressed for those only.
_FILTERED_SQL = f"""
    SELECT st.session_id, st.id, st.seq, st.at, st.type, st.outcome,
           coalesce((SELECT group_concat(json_extract(j.value, '$.severity') || ' '
                                         || json_extract(j.value, '$.kind') || ': '
                                         || json_extract(j.value, '$.reason'), ' | ')
                       FROM json_each(postrun_record(st.record), '$.flags') j),
                    substr(postrun_search_text(st.record), 1, 160)),
           {_ACTOR_COLUMNS}
      FROM steps st
      {_ACTOR_JOIN}
     WHERE ?1 = '' AND ?6 >= 0 AND ?7 IS NULL
       AND st.rowid IN (SELECT rowid FROM steps
                         WHERE (?2 IS NULL OR type = ?2) AND (?3 = 0 OR outcome = 'failed')
                           AND (?4 IS NULL OR at >= ?4)
                           AND (?8 IS NULL OR session_id IN (SELECT id FROM sessions WHERE agent = ?8))
                         ORDER BY at DESC, session_id, seq LIMIT ?5)
     ORDER BY st.at DESC, st.session_id, st.seq
"""
_MATCH_SQL = f"""
    SELECT st.session_id, st.id, st.seq, st.at, st.type, st.outcome,
           snippet(step_search, 0, '»', '«', '…', 16),
           {_ACTOR_COLUMNS}
      FROM step_search JOIN steps st ON st.rowid = step_search.rowid
      {_ACTOR_JOIN}
     WHERE step_search MATCH ?1 AND step_search.rowid >= ?6
       AND (?2 IS NULL OR st.type = ?2)
       AND (?3 = 0 OR st.outcome = 'failed')
       AND (?4 IS NULL OR st.at >= ?4)
       AND {_HAS_FLAG_SQL}
       AND {_OF_AGENT_SQL}
     ORDER BY rank
     LIMIT ?5
"""


def search(database: Database, query: SearchQuery, *, limit: int = 50, window: int | None = None) -> list[SearchHit]:
    """Steps whose content matches ``query``, best matches first (flagged steps newest first);
    with ``window``, the best among the newest ``window`` matching steps (ranking every match of
    a common word is slow)."""
    floor = 0  # rowids start at 1: no floor
    if window is not None and query.match:
        newest = database.execute(
            "SELECT rowid FROM step_search WHERE step_search MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
            (query.match, window - 1),
        ).get
        floor = 0 if newest is None else int(newest)
    sql = _MATCH_SQL if query.match else _FLAGGED_SQL if query.flag is not None else _FILTERED_SQL
    most = min(limit, MAX_INTEGER)
    rows: Sequence[tuple[Any, ...]] = database.execute(
        sql,
        (query.match, query.step_type, int(query.failed), query.since_utc, most, floor, query.flag, query.agent),
    ).fetchall()
    return [
        SearchHit(session_id, step_id, seq, at, kind, outcome, one_line(snippet or ""), actor_id, label)
        for session_id, step_id, seq, at, kind, outcome, snippet, actor_id, label in rows
    ]


def since_utc(text: str) -> str:
    """``--since`` as UTC: a date (local midnight) or an ISO date-time."""
    try:
        return normalize_timestamp(text)
    except ValueError:
        raise UsageError("--since", f"expected a date like 2026-11-29 or an ISO date-time, got {text!r}") from None
