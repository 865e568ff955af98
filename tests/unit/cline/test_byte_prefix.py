"""A resumed pass proves the known messages unchanged by their bytes in the file.

Every case maps the rewritten file with the cache the last pass left and without any
cache, and the two must agree (``remap``); the cases also say whether the bytes alone
vouched for the known messages (the fast path) or a full comparison had to. When they
vouch, the file is parsed without the known messages (exactly then: ``Session.rewrite``
checks it), and that mapping must equal a fresh one of the whole file."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from postrun.agents.cline import MappingCache, SessionLocation, map_session, read_session
from postrun.agents.cline.files import SessionFiles
from postrun.agents.cline.layout import ByteLayout, KnownMessages, list_start, measure_list, parse_without_known
from postrun.agents.cline.transcript import read_transcript
from postrun.errors import NotParseableYet, SourceError
from postrun.jsonio import parse_json
from postrun.records import RawFile
from tests.unit.cline.kit import (
    ALL_AUTO,
    FIXTURES,
    MAX_BYTES,
    answer,
    call,
    default_manifest,
    files_with_document,
    item,
    message,
    prompt,
    remap,
    same_mapping,
)

Layout = Callable[[Any], bytes]


def cline(document: Any) -> bytes:
    """What Cline writes: ``JSON.stringify(document, null, 2)``."""
    return orjson.dumps(document, option=orjson.OPT_INDENT_2)


def compact(document: Any) -> bytes:
    return orjson.dumps(document)


def four_spaces(document: Any) -> bytes:
    """A layout no message's serialization matches: found token by token."""
    return json.dumps(document, indent=4, ensure_ascii=False).encode()


def _messages() -> list[dict[str, Any]]:
    return [
        prompt("u1", "list it"),
        message("a1", "assistant", [{"type": "text", "text": "ok"}, call("c1", "run_commands", ["ls"])]),
        message("r1", "user", [answer("c1", [item("ls", 'a "quoted" \\ [bracket] {brace}')])]),
        message("a2", "assistant", [call("c2", "run_commands", ["pwd"])], metrics={"inputTokens": 5, "cost": 0.5}),
    ]


def _document(messages: list[Any], **fields: Any) -> dict[str, Any]:
    return {"version": 1, "updated_at": "2026-09-21T14:00:00.000Z", "agent": "lead", **fields, "messages": messages}


def _files(data: bytes, cut: tuple[Any, KnownMessages] | None = None) -> SessionFiles:
    document, known = cut if cut is not None else (parse_json(data, "x", "messages"), None)
    files = files_with_document(document, default_manifest())
    messages = files.source_files[0]
    raw = RawFile(f"sessions/{files.location.session_id}/x.messages.json", data, messages)
    return SessionFiles(files.location, files.messages, files.manifest, files.source_files, (raw,), known=known)


def _strict(data: bytes) -> bool:
    try:
        parse_json(data, "x", "messages", lenient=False)
    except SourceError:
        return False
    return True


class Session:
    """A session rewritten whole, mapped after each rewrite with the cache of the last mapping."""

    def __init__(self, data: bytes) -> None:
        self.cache: MappingCache | None = None
        self.data = b""
        self.rewrite(data)

    @property
    def layout(self) -> ByteLayout | None:
        assert self.cache is not None and self.cache.transcript is not None
        return self.cache.transcript.layout

    def vouched(self, data: bytes) -> bool:
        """Whether the bytes alone show every message of the last file unchanged in ``data``."""
        document = parse_json(data, "x", "messages")
        bare = isinstance(document, list)
        return measure_list(data, bare, document if bare else document["messages"], self.layout)[1]

    def rewrite(self, data: bytes) -> bool:
        vouched = self.cache is not None and self.layout is not None and self.vouched(data)
        cut = parse_without_known(data, self.layout, "x") if self.cache is not None and self.layout else None
        assert (cut is not None) == (vouched and self.layout is not None and self.layout.strict and _strict(data))
        if cut is None:
            self.cache = remap(_files(data), ALL_AUTO, self.cache)
        else:  # the next rewrite resumes from this pass, as a capture's does
            partial, self.cache = map_session(_files(data, cut), ALL_AUTO, self.cache)
            assert same_mapping(partial, map_session(_files(data), ALL_AUTO)[0])
        self.data = data
        return vouched


@pytest.mark.parametrize("layout", [cline, compact, four_spaces])
def test_an_appended_message_is_vouched_for_by_the_bytes(layout: Layout) -> None:
    messages = _messages()
    session = Session(layout(_document(messages)))
    assert session.layout is not None and session.layout.count == 4
    for index in range(3):
        messages.append(message(f"a{index + 3}", "assistant", f"more {index}"))
        assert session.rewrite(layout(_document(messages)))
        assert session.layout is not None and session.layout.count == len(messages)
    messages.append(message("r2", "user", [answer("c2", [item("pwd", "/")])]))  # an earlier call's result
    assert session.rewrite(layout(_document(messages)))


@pytest.mark.parametrize("layout", [cline, compact, four_spaces])
def test_top_level_fields_around_the_messages_may_change(layout: Layout) -> None:
    messages = _messages()
    session = Session(layout(_document(messages)))
    messages.append(message("a3", "assistant", "more"))
    changed = _document(messages, updated_at="2026-09-21T14:00:09.000Z", origin={"source": "cli", "messages": [1]})
    assert session.rewrite(layout({**changed, "system_prompt": "you are [ { a tool"}))


def _changes_in_messages(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, another byte) for every letter and digit of the file's messages."""
    start = list_start(data, False)
    assert start is not None
    changes = []
    for index in range(start, len(data)):
        byte = data[index : index + 1]
        if byte.isalpha():
            changes.append((index, b"Q" if byte != b"Q" else b"R"))
        elif byte.isdigit():
            changes.append((index, b"7" if byte != b"7" else b"3"))
    return changes


@pytest.mark.parametrize("layout", [cline, compact, four_spaces])
def test_any_letter_or_digit_changed_in_a_known_message_is_caught(layout: Layout) -> None:
    messages = _messages()
    original = layout(_document(messages))
    messages.append(message("a3", "assistant", "more"))
    appended = layout(_document(messages))
    read = Session(original)
    checked = 0
    for index, byte in _changes_in_messages(original):
        changed = appended[:index] + byte + appended[index + 1 :]
        try:
            parse_json(changed, "x", "messages")
        except NotParseableYet:
            continue  # no longer JSON (a letter of ``true``): Cline never writes that
        session = copy.copy(read)  # its cache is never changed, only replaced
        assert not session.vouched(changed), index
        session.rewrite(changed)  # the cached and the fresh mapping agree
        checked += 1
    assert checked > 300


@pytest.mark.parametrize(
    "rewrite",
    [
        pytest.param(lambda t: t.pop(), id="last removed"),
        pytest.param(lambda t: t.pop(1), id="one removed"),
        pytest.param(lambda t: t.clear(), id="all removed"),
        pytest.param(lambda t: t.reverse(), id="reordered"),
        pytest.param(lambda t: t.insert(1, message("a0", "assistant", "inserted")), id="inserted"),
        pytest.param(lambda t: t[3].update(ts=1), id="a field changed"),
        pytest.param(lambda t: t[3].update(extra="x"), id="a field added"),
        pytest.param(lambda t: t[0].pop("ts"), id="a field removed"),
        pytest.param(lambda t: t[2].update(content="as a string"), id="a content replaced"),
    ],
)
@pytest.mark.parametrize("layout", [cline, compact, four_spaces])
def test_any_other_change_of_the_messages_is_not_vouched_for(layout: Layout, rewrite: Any) -> None:
    messages = _messages()
    session = Session(layout(_document(messages)))
    rewrite(messages)
    messages.append(message("a9", "assistant", "more"))
    assert not session.rewrite(layout(_document(messages)))
    messages.append(message("a10", "assistant", "and more"))
    assert session.rewrite(layout(_document(messages)))  # measured again: the next append is fast


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(cline, compact, id="indented to compact"),
        pytest.param(compact, cline, id="compact to indented"),
        pytest.param(cline, four_spaces, id="to four spaces"),
    ],
)
def test_a_file_laid_out_anew_is_compared_in_full(before: Layout, after: Layout) -> None:
    messages = _messages()
    session = Session(before(_document(messages)))
    messages.append(message("a3", "assistant", "more"))
    assert not session.rewrite(after(_document(messages)))
    messages.append(message("a4", "assistant", "more"))
    assert session.rewrite(after(_document(messages)))


@pytest.mark.parametrize("key", ['"messages"', '"m\\u0065ssages"'])
def test_a_second_messages_key_is_never_vouched_for(key: str) -> None:
    """The parsed list is the last key's: the bytes of the first list say nothing about it."""
    messages = _messages()
    first = cline(_document(messages))
    session = Session(first)
    messages.append(message("a3", "assistant", "more"))
    later = [{**messages[0], "ts": 5}, *messages[1:]]
    data = cline(_document(messages))[:-2] + f",\n  {key}: ".encode() + cline(later) + b"\n}"
    assert parse_json(data, "x", "messages")["messages"] == later
    assert not session.rewrite(data)
    assert session.layout is None


def test_a_bare_list_of_messages_is_vouched_for_too() -> None:
    messages = _messages()
    session = Session(cline(messages))
    messages.append(message("a3", "assistant", "more"))
    assert session.rewrite(cline(messages))
    messages[1] = {**messages[1], "ts": 2}
    assert not session.rewrite(cline(messages))


def test_a_stale_tail_after_the_document_is_not_read() -> None:
    messages = _messages()
    session = Session(cline(_document(messages)))
    messages.append(message("a3", "assistant", "more"))
    assert session.rewrite(cline(_document(messages)) + b'\n  "messages": []\n}')


def test_a_message_too_deep_to_serialize_is_vouched_for_by_its_bytes() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    messages = [*_messages(), {"role": "system", "content": deep}]
    session = Session(json.dumps(_document(messages)).encode())
    assert session.layout is not None and session.layout.count == 5
    messages.append(message("a3", "assistant", "done"))
    assert session.rewrite(json.dumps(_document(messages)).encode())


def test_only_a_pass_given_the_bytes_measures_them() -> None:
    data = cline(_document(_messages()))
    document = parse_json(data, "x", "messages")
    first = read_transcript(document, "x", None, data)
    assert first.resume is not None and first.resume.layout is not None
    second = read_transcript(document, "x", first.resume)
    assert second.resume is not None and second.resume.layout is None


def test_an_ended_session_is_measured_only_when_mapped_again() -> None:
    files = _files(cline(_document(_messages())))
    ended = SessionFiles(
        files.location,
        files.messages,
        default_manifest(ended_at="2026-09-21T15:00:00.000Z", status="completed"),
        files.source_files,
        files.raw,
    )
    _, cache = map_session(ended, ALL_AUTO)
    assert cache.transcript is not None and cache.transcript.layout is None
    _, cache = map_session(ended, ALL_AUTO, cache)
    assert cache.transcript is not None and cache.transcript.layout is not None


def test_a_helpers_transcript_is_vouched_for_by_its_bytes_too(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "cline" / "teammate" / "data", tmp_path / "data")
    location = SessionLocation.in_root(tmp_path / "data" / "sessions", "1790000500000_teams")
    cache = remap(read_session(location, max_bytes=MAX_BYTES), ALL_AUTO, None)
    cache = remap(read_session(location, max_bytes=MAX_BYTES), ALL_AUTO, cache)  # mapped again: measured
    name = "reviewer__Z2skp8"
    last = cache.helpers[name].transcript
    assert last is not None and last.layout is not None
    helper = location.folder / f"{name}.messages.json"
    document = parse_json(helper.read_bytes(), "x", "messages")
    document["messages"].append(message("h9", "assistant", "one more thing"))
    helper.write_bytes(cline(document))
    assert measure_list(helper.read_bytes(), False, document["messages"], last.layout)[1]
    remap(read_session(location, max_bytes=MAX_BYTES), ALL_AUTO, cache)


@pytest.mark.parametrize("layout", [cline, compact, four_spaces])
def test_a_file_parsed_without_its_known_messages_reads_as_the_whole_file(layout: Layout) -> None:
    messages = _messages()
    session = Session(layout(_document(messages)))
    messages.append(message("r2", "user", [answer("c2", [item("pwd", "/")])]))  # maps a2 again
    data = layout(_document(messages, updated_at="2026-09-21T14:00:09.000Z"))
    assert session.layout is not None
    cut = parse_without_known(data, session.layout, "x")
    assert cut is not None and cut[0]["messages"] == messages[4:]
    assert session.cache is not None
    transcript = read_transcript(cut[0], "x", session.cache.transcript, None, cut[1])
    assert list(transcript.raw_messages) == messages
    assert {**transcript.document, "messages": messages} == parse_json(data, "x", "messages")
    assert session.rewrite(data)


def test_known_messages_with_nothing_after_them_are_all_the_messages() -> None:
    messages = _messages()
    session = Session(cline(_document(messages)))
    assert session.rewrite(cline(_document(messages, updated_at="2026-09-21T14:00:09.000Z", system_prompt="[ {")))


def test_a_cut_file_mapped_without_that_cache_is_read_whole() -> None:
    messages = _messages()
    session = Session(cline(_document(messages)))
    messages.append(message("a3", "assistant", "more"))
    data = cline(_document(messages))
    assert session.layout is not None
    cut = parse_without_known(data, session.layout, "x")
    assert cut is not None
    fresh = map_session(_files(data), ALL_AUTO)[0]
    assert same_mapping(map_session(_files(data, cut), ALL_AUTO)[0], fresh)
    other = Session(cline(_document(messages[:4])))  # an equal layout, but not the one the file was cut by
    assert same_mapping(map_session(_files(data, cut), ALL_AUTO, other.cache)[0], fresh)


def _known_end(data: bytes, layout: ByteLayout) -> int:
    start = list_start(data, False)
    assert start is not None
    return start + layout.end - layout.start


def measured_teammates(tmp_path: Path) -> tuple[SessionLocation, Any, MappingCache]:
    """The teammate fixture laid out as Cline writes it, mapped twice (the second pass measures it)."""
    shutil.copytree(FIXTURES / "cline" / "teammate" / "data", tmp_path / "data")
    location = SessionLocation.in_root(tmp_path / "data" / "sessions", "1790000500000_teams")
    document = parse_json(location.messages.read_bytes(), "x", "messages")
    location.messages.write_bytes(cline(document))
    cache = remap(read_session(location, max_bytes=MAX_BYTES), ALL_AUTO, None)
    cache = remap(read_session(location, max_bytes=MAX_BYTES), ALL_AUTO, cache)
    return location, document, cache


@pytest.mark.parametrize(
    "rewrite",
    [
        pytest.param(lambda data, end: data[:end] + b",\n  ]\n}", id="a comma before the list's end"),
        pytest.param(lambda data, end: data[:end] + b'\n  {"role": "user"}\n  ]\n}', id="no comma before a message"),
        pytest.param(lambda data, end: data[:end] + b',\n  {"role": "us', id="torn in a new message"),
        pytest.param(lambda data, end: data[:end], id="torn just after the known messages"),
        pytest.param(lambda data, end: data[: end - 3], id="torn in the known messages"),
        pytest.param(lambda data, end: data[:end] + b",\n  ]]\n}", id="not JSON after the known messages"),
    ],
)
def test_a_file_that_does_not_parse_whole_is_never_parsed_cut(tmp_path: Path, rewrite: Any) -> None:
    """Its failure is the whole file's, at the whole file's offsets."""
    location, document, cache = measured_teammates(tmp_path)
    last = cache.transcript.layout if cache.transcript is not None else None
    assert last is not None
    data = rewrite(cline(document), _known_end(cline(document), last))
    assert parse_without_known(data, last, "x") is None
    location.messages.write_bytes(data)
    with pytest.raises(NotParseableYet) as whole:
        read_session(location, max_bytes=MAX_BYTES)
    with pytest.raises(NotParseableYet) as cut:
        read_session(location, max_bytes=MAX_BYTES, known=last)
    assert str(cut.value) == str(whole.value)


def test_a_session_read_after_its_last_pass_parses_only_the_new_messages(tmp_path: Path) -> None:
    """Through the files: the lead's transcript is cut, a helper's read whole, the vault's copy is the whole file."""
    location, document, cache = measured_teammates(tmp_path)
    for index in range(3):
        document["messages"].append(message(f"n{index}", "assistant", f"one more {index}"))
        location.messages.write_bytes(cline(document))
        last = cache.transcript.layout if cache.transcript is not None else None
        files = read_session(location, max_bytes=MAX_BYTES, known=last)
        assert files.known is not None and files.messages["messages"] == document["messages"][-1:]
        assert files.raw[0].data == location.messages.read_bytes()
        assert all(not isinstance(side.document, dict) or len(side.document["messages"]) > 1 for side in files.helpers)
        mapped, cache = map_session(files, ALL_AUTO, cache)
        assert same_mapping(mapped, map_session(read_session(location, max_bytes=MAX_BYTES), ALL_AUTO)[0])


@pytest.mark.parametrize(
    ("odd", "lenient"),
    [
        pytest.param(b'"\\ud800 alone"', True, id="a lone surrogate escaped"),
        pytest.param(b'"\\ud83d\\ude00 paired"', False, id="a pair of surrogates escaped (never cut either)"),
        pytest.param(b'"\xff not UTF-8"', True, id="a byte that is not UTF-8"),
    ],
)
def test_known_messages_read_leniently_are_never_cut(odd: bytes, lenient: bool) -> None:
    """The lenient parser reads a whole file holding them: it reads an integer beyond 64 bits
    as an integer where the strict one reads a float, so a cut file would read otherwise."""
    messages = _messages()
    data = cline(_document([*messages, message("a3", "assistant", "PLACEHOLDER")]))
    session = Session(data.replace(b'"PLACEHOLDER"', odd))
    assert session.layout is not None and not session.layout.strict
    huge = message("a4", "assistant", "big", metrics={"inputTokens": 5, "cost": "HUGE"})
    rewritten = cline(_document([*messages, message("a3", "assistant", "PLACEHOLDER"), huge]))
    rewritten = rewritten.replace(b'"PLACEHOLDER"', odd).replace(b'"HUGE"', b"123456789012345678901")
    assert parse_without_known(rewritten, session.layout, "x") is None
    if lenient:
        with pytest.raises(SourceError, match="64-bit"):  # read whole: an integer, which the mapping refuses
            session.rewrite(rewritten)
    else:
        assert session.rewrite(rewritten)


def test_new_messages_read_leniently_are_never_cut() -> None:
    messages = _messages()
    session = Session(cline(_document(messages)))
    assert session.layout is not None and session.layout.strict
    data = cline(_document([*messages, message("a3", "assistant", "PLACEHOLDER")]))
    assert session.layout is not None
    assert parse_without_known(data.replace(b'"PLACEHOLDER"', b'"\\ud800"'), session.layout, "x") is None
    assert session.rewrite(data.replace(b'"PLACEHOLDER"', b'"\\ud800"'))
    assert session.layout is not None and not session.layout.strict


@pytest.mark.parametrize("case", sorted(path.name for path in (FIXTURES / "cline").iterdir()))
def test_every_fixture_session_read_cut_maps_as_read_whole(tmp_path: Path, case: str) -> None:
    shutil.copytree(FIXTURES / "cline" / case / "data", tmp_path / "data")
    root = tmp_path / "data" / "sessions"
    cuts = 0
    for folder in sorted(root.iterdir()):
        location = SessionLocation.in_root(root, folder.name)
        try:
            document = parse_json(location.messages.read_bytes(), "x", "messages")
            cache = remap(read_session(location, max_bytes=MAX_BYTES), ALL_AUTO, None)
        except (SourceError, OSError):
            continue  # a session no pass maps
        assert isinstance(document, dict)
        for index in range(3):  # the first rewrite lays the file out as Cline does: measured anew
            document["messages"].append(message(f"n{index}", "assistant", f"one more {index}"))
            location.messages.write_bytes(cline(document))
            last = cache.transcript.layout if cache.transcript is not None else None
            files = read_session(location, max_bytes=MAX_BYTES, known=last)
            cuts += files.known is not None
            mapped, cache = map_session(files, ALL_AUTO, cache)
            assert same_mapping(mapped, map_session(read_session(location, max_bytes=MAX_BYTES), ALL_AUTO)[0])
    assert cuts > 0
