"""Reading one JSON file that another program may be rewriting."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from postrun.errors import NotFound, NotParseableYet, SourceError
from postrun.jsonio import read_json, stat_fingerprint

MB = 2**20


def read(path: Path, max_bytes: int = 100 * MB, **options: Any) -> Any:
    return read_json(path, kind="messages", max_bytes=max_bytes, **options)


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "s.messages.json"
    path.write_bytes(data)
    return path


def test_reads_a_json_document(tmp_path: Path) -> None:
    assert read(write(tmp_path, b'{"messages": [1, "x"]}')) == {"messages": [1, "x"]}


@pytest.mark.parametrize("data", [b"", b"  \n", b'{"messages": [{"id": "m1", "content": "hal', b"[1, 2"])
def test_empty_or_torn_file_is_not_parseable_yet(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, data)
    with pytest.raises(NotParseableYet) as caught:
        read(path)
    assert caught.value.kind == "messages"
    assert str(caught.value).startswith(f"{path}: messages file not parseable yet (mid-write?)")


def test_kind_names_the_file_role(tmp_path: Path) -> None:
    path = write(tmp_path, b"{")
    with pytest.raises(NotParseableYet, match="manifest file not parseable yet"):
        read_json(path, kind="manifest", max_bytes=MB)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"a": 1}\n  "stale": true}\n', {"a": 1}),
        ('{"a": "\u00e9\u20ac\U0001f600"}tail of the old one'.encode(), {"a": "\u00e9\u20ac\U0001f600"}),
        (b'{"a": "\xc3\xa9"}\xff\xfe stale', {"a": "\u00e9"}),  # the stale tail is not even UTF-8
        (b'{"a": "\\ud800"} {"b": 2}', {"a": "\ufffd"}),
    ],
)
def test_first_complete_value_wins_over_a_stale_tail(tmp_path: Path, data: bytes, expected: Any) -> None:
    assert read(write(tmp_path, data)) == expected


def test_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    assert read(write(tmp_path, b'{"a": "x\xffy", "b": "\xe2\x82"}')) == {"a": "x\ufffdy", "b": "\ufffd"}


def test_lone_surrogates_are_replaced_in_keys_and_values(tmp_path: Path) -> None:
    data = rb'{"\ud800k": ["v\udc00", {"\udfff": "pair \ud83d\ude00 kept"}]}'
    found = read(write(tmp_path, data))
    assert found == {"\ufffdk": ["v\ufffd", {"\ufffd": "pair \U0001f600 kept"}]}
    orjson.dumps(found)  # every string can be written again


def test_nul_characters_are_kept(tmp_path: Path) -> None:
    assert read(write(tmp_path, rb'{"a": "x\u0000y"}')) == {"a": "x\x00y"}
    assert read(write(tmp_path, b'{"a": "\\u0000\xff"}')) == {"a": "\x00\ufffd"}


@pytest.mark.parametrize(
    "data",
    [b"[" * 5000 + b"]" * 5000, b"[" * 5000 + b'"\xff"' + b"]" * 5000],
    ids=["orjson", "lenient decoder"],
)
def test_deep_nesting_is_a_source_error_not_a_crash(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(SourceError, match=r"nested deeper than \d+ levels") as caught:
        read(write(tmp_path, data))
    assert not isinstance(caught.value, NotParseableYet)


@pytest.mark.parametrize("tail", [b"", b"\xff"], ids=["utf8", "lenient decoder"])
def test_sixty_megabyte_strings_work(tmp_path: Path, tail: bytes) -> None:
    size = 60 * MB
    path = write(tmp_path, b'{"s": "' + b"a" * size + tail + b'"}')
    found = read(path)
    assert len(found["s"]) == size + len(tail)


def test_larger_than_the_limit_is_refused_without_reading(tmp_path: Path) -> None:
    path = write(tmp_path, b"")
    with path.open("r+b") as handle:
        handle.truncate(64 * 2**30)  # sparse: reading it would take minutes and 64 GB
    with pytest.raises(SourceError) as caught:
        read(path, max_bytes=2 * MB)
    assert str(caught.value) == f"{path}: larger than 2 MB (max_file_mb)"


def test_exactly_the_limit_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, b"[" + b" " * (MB - 2) + b"]")
    assert read(path, max_bytes=MB) == []


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        read(tmp_path / "missing.json")


def _refuses_quickly(path: Path, **options: Any) -> SourceError:
    """Read in a thread so a regression that blocks fails the test instead of hanging it."""
    raised: list[BaseException] = []
    reader = threading.Thread(target=lambda: _capture(raised, path, options), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading blocked"
    assert len(raised) == 1 and isinstance(raised[0], SourceError), raised
    return raised[0]


def _capture(raised: list[BaseException], path: Path, options: dict[str, Any]) -> None:
    try:
        read(path, **options)
    except BaseException as exc:  # noqa: BLE001 - handed to the test thread
        raised.append(exc)


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "s.messages.json"
    os.mkfifo(fifo)
    assert _refuses_quickly(fifo).reason == "not a regular file (fifo)"


def test_symlink_to_a_fifo_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    link = tmp_path / "s.messages.json"
    link.symlink_to(tmp_path / "pipe")
    assert _refuses_quickly(link).reason == "not a regular file (fifo)"


def test_directory_and_devices_are_refused(tmp_path: Path) -> None:
    assert _refuses_quickly(tmp_path).reason == "not a regular file (directory)"
    assert _refuses_quickly(Path("/dev/null")).reason == "not a regular file (character device)"


def test_socket_is_refused() -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:  # short: socket paths are limited
        path = Path(folder) / "s"
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(path))
            assert _refuses_quickly(path).reason == "not a regular file (socket)"


def test_symlinks_are_followed_unless_the_caller_resolved_them(tmp_path: Path) -> None:
    real = write(tmp_path, b"[1]")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert read(link) == [1]
    assert _refuses_quickly(link, follow_symlinks=False).reason == "not a regular file (symlink)"


def test_unreadable_file_is_a_source_error(tmp_path: Path) -> None:
    path = write(tmp_path, b"[1]")
    path.chmod(0)
    if os.access(path, os.R_OK):
        pytest.skip("running with permission to read anything")
    with pytest.raises(SourceError, match="cannot open"):
        read(path)


def test_stat_fingerprint(tmp_path: Path) -> None:
    path = write(tmp_path, b"[1, 2]")
    found = stat_fingerprint(path)
    info = path.stat()
    assert found is not None
    assert (found.path, found.size, found.mtime_ns, found.ino) == (str(path), 6, info.st_mtime_ns, info.st_ino)
    assert stat_fingerprint(tmp_path / "missing") is None
    assert stat_fingerprint(path / "below-a-file") is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"this is not JSON at all", "not a JSON file"),
        (b'{"a": 1e999}', "not valid JSON"),
    ],
)
def test_a_file_that_will_never_parse_is_not_called_torn(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "s.messages.json"
    path.write_bytes(content)
    with pytest.raises(SourceError, match=message) as caught:
        read_json(path, kind="messages", max_bytes=2**20)
    assert not isinstance(caught.value, NotParseableYet)
