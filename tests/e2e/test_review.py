"""Flags, redaction, forget and exclude through the real `postrun` process and a real store."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import apsw
import orjson
import pytest

from postrun.review.flags import FLAG_KINDS
from postrun.schema import validate_envelope
from postrun.store import codec
from tests.conftest import FIXTURES, run_postrun
from tests.support.capture_process import CaptureProcess, copy_data
from tests.support.secret_samples import SAMPLES

CASE = "cline/review_flags"
SESSION = "1790000100000_review"
BASIC = "1790000000000_basic"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return copy_data(CASE, tmp_path / "data")


@pytest.fixture
def stored(env: dict[str, str], root: Path) -> dict[str, str]:
    done = run_postrun("ingest", str(root / SESSION), env=env)
    assert done.returncode == 0, done.stderr
    return env


def store_files(env: dict[str, str]) -> list[Path]:
    db = Path(env["POSTRUN_DB"])
    return [path for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if path.exists()]


def test_every_flag_kind_is_stored_shown_listed_and_exported(stored: dict[str, str]) -> None:
    listing = run_postrun("sessions", env=stored).stdout
    assert "9 flagged" in listing
    assert SESSION in run_postrun("sessions", "--flagged", env=stored).stdout

    shown = run_postrun("show", SESSION, env=stored).stdout
    for kind in FLAG_KINDS:
        assert any(line.lstrip().startswith("! ") and f" {kind}: " in line for line in shown.splitlines()), kind
    assert "! danger dangerous_command: rm -rf outside build output: rm -rf /home/dev/shop/data" in shown
    assert "! warn dangerous_command: git push --force-with-lease" in shown
    assert "rm -rf node_modules" not in shown.split("! ")[-1]  # routine output is not flagged

    for kind in FLAG_KINDS:
        hits = orjson.loads(run_postrun("search", "--flag", kind, "--json", env=stored).stdout)
        assert hits and all(kind in hit["snippet"] for hit in hits), kind
    found = orjson.loads(run_postrun("search", "push", "--flag", "dangerous_command", "--json", env=stored).stdout)
    assert sorted(hit["step_id"] for hit in found) == ["toolu_cmds#1", "toolu_cmds#2"]
    wrong = run_postrun("search", "--flag", "nope", env=stored)
    assert wrong.returncode == 2 and "unknown flag kind 'nope'" in wrong.stderr

    envelope = orjson.loads(run_postrun("export", SESSION, env=stored).stdout)
    validate_envelope(envelope)
    by_id = {step["id"]: step for step in envelope["steps"]}
    assert {f["kind"] for f in by_id["toolu_cmds#4"]["flags"]} == {"dangerous_command", "secret_in_output"}
    assert [f["kind"] for f in by_id["toolu_rejected#0"]["flags"]] == ["dangerous_command", "rejected", "failed"]


def test_no_secret_survives_a_redacted_output(stored: dict[str, str], tmp_path: Path) -> None:
    outputs = {}
    for export_format, flag in (("markdown", None), ("html", None), ("json", "--redact"), ("jsonl", "--redact")):
        args = ["export", SESSION, "--format", export_format, *([flag] if flag else [])]
        done = run_postrun(*args, env=stored)
        assert done.returncode == 0, done.stderr
        outputs[export_format] = (done.stdout, done.stderr)
    outputs["show"] = (run_postrun("show", SESSION, "--redact", "--history", env=stored).stdout, "")
    for name, (text, stderr) in outputs.items():
        for kind, (secret, _) in SAMPLES.items():
            assert secret not in text, (name, kind)
            assert secret not in stderr, (name, kind)
            if name != "show":
                assert f"masked {kind} in step #6 toolu_cmds#4.payload.stdout: " in stderr, (name, kind)
        assert "[REDACTED:github_token]" in text or name == "show"  # show prints no output, only reasons
    envelope = orjson.loads(outputs["json"][0])
    validate_envelope(envelope)  # still a v1.2 envelope
    # The archive formats are whole unless asked: the secrets are there without --redact.
    whole = run_postrun("export", SESSION, env=stored)
    assert SAMPLES["github_token"][0] in whole.stdout and "masked" not in whole.stderr
    plain_markdown = run_postrun("export", SESSION, "--format", "markdown", "--no-redact", env=stored).stdout
    assert SAMPLES["github_token"][0] in plain_markdown


def test_search_redact_masks_every_secret_it_would_print(stored: dict[str, str]) -> None:
    secrets = [secret for secret, _ in SAMPLES.values()]
    queries = (
        "aws_access_key_id",
        "ghp_K9mW2xQ7vL4pR8sT1nB6cY3dF5gH0jZ2aE7u",
        "cookie",
        "Stripe",
        "DATABASE_URL",
        "maps",
    )
    plain = "".join(run_postrun("search", query, "--limit", "5", env=stored).stdout for query in queries)
    assert any(secret in plain for secret in secrets)  # without --redact, search prints them
    for query in queries:
        for extra in ((), ("--json",)):
            done = run_postrun("search", query, "--redact", *extra, env=stored)
            assert done.returncode == 0, done.stderr
            assert "toolu_cmds#4" in done.stdout and "[REDACTED:" in done.stdout, (query, done.stdout)
            # Not a secret, nor a piece of one the snippet's window cut (8 characters and more).
            pieces = {secret[i : i + 8] for secret in secrets for i in range(len(secret) - 7)}
            assert not [piece for piece in pieces if piece in done.stdout], (query, done.stdout)


def test_redaction_shows_home_as_tilde(env: dict[str, str], root: Path) -> None:
    env["HOME"] = "/home/dev"
    assert run_postrun("ingest", str(root / SESSION), env=env).returncode == 0
    markdown = run_postrun("export", SESSION, "--format", "markdown", env=env).stdout
    assert "/home/dev" not in markdown and "~/shop" in markdown and "~/.ssh/id_ed25519" in markdown


def test_html_export_is_one_private_file_without_script(stored: dict[str, str], tmp_path: Path) -> None:
    target = tmp_path / "share" / "session.html"
    target.parent.mkdir()
    done = run_postrun("export", SESSION, "--format", "html", "-o", str(target), env=stored)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    page = target.read_text()
    assert "<script" not in page.lower() and "src=" not in page.lower()
    policy = page.split('http-equiv="Content-Security-Policy" content="', 1)[1].split('"', 1)[0]
    for directive in (
        "script-src 'none'",
        "frame-src 'none'",
        "form-action 'none'",
        "connect-src 'none'",
        "default-src 'none'",
    ):
        assert directive in policy
    assert "⚑ danger dangerous_command: download run by a shell or interpreter" in page
    assert "&gt; Authorization: Bearer [REDACTED:authorization_header]" in page  # escaped, and redacted


def record_pieces(env: dict[str, str], session_id: str) -> list[bytes]:
    """A piece of each of the session's stored (compressed) step records that fits in one page,
    so it lies whole in the file while the record is there."""
    with apsw.Connection(env["POSTRUN_DB"], flags=apsw.SQLITE_OPEN_READONLY) as connection:
        stored = [
            bytes(blob)
            for (blob,) in connection.execute("SELECT record FROM steps WHERE session_id = ?", (session_id,))
        ]
    return [blob[len(blob) // 2 : len(blob) // 2 + 24] for blob in stored if 48 <= len(blob) <= 2000]


def test_forget_leaves_no_byte_and_ingest_force_brings_it_back(stored: dict[str, str], root: Path) -> None:
    secret = SAMPLES["github_token"][0].encode()
    words = b"Clean up the deploy and check the config"
    pieces = record_pieces(stored, SESSION)  # the records are kept compressed: the secret is in one of them
    assert len(pieces) >= 10
    assert all(any(piece in path.read_bytes() for path in store_files(stored)) for piece in pieces)

    dry = run_postrun("forget", SESSION[:10], env=stored)
    assert dry.returncode == 0 and f"would forget {SESSION}: 12 steps" in dry.stdout and "dry run" in dry.stderr
    assert SESSION in run_postrun("sessions", env=stored).stdout

    done = run_postrun("forget", SESSION, "--yes", env=stored)
    assert done.returncode == 0, done.stderr
    assert f"forgot {SESSION}: 12 steps, 0 earlier versions, 3 raw copies of the agent's files" in done.stdout
    raw = run_postrun("raw", SESSION, "--to", str(root.parent / "raw"), env=stored)
    assert (raw.returncode, raw.stderr.count("\n")) == (1, 1), raw.stderr  # the vault keeps nothing of it either
    assert f"no session {SESSION} in " in raw.stderr, raw.stderr
    reingest = run_postrun("reingest", SESSION, env=stored)
    assert (reingest.returncode, reingest.stderr.count("\n")) == (1, 1), reingest.stderr
    assert f"no session {SESSION} in " in reingest.stderr, reingest.stderr
    assert SESSION not in run_postrun("sessions", env=stored).stdout
    with apsw.Connection(stored["POSTRUN_DB"]) as connection:
        queued = connection.execute("SELECT op FROM mirror_outbox WHERE session_id = ?", (SESSION,)).fetchall()
    assert queued == [("delete",)]  # the team mirror is told to forget it too
    for path in store_files(stored):
        content = path.read_bytes()
        assert secret not in content, path
        assert words not in content and words.lower() not in content, path
        assert b"get.example.sh" not in content, path
        assert not [piece for piece in pieces if piece in content], path

    again = run_postrun("ingest", str(root / SESSION), env=stored)
    assert again.returncode == 0 and "forgotten (postrun forget)" in again.stderr
    assert SESSION not in run_postrun("sessions", env=stored).stdout

    back = run_postrun("ingest", "--force", str(root / SESSION), env=stored)
    assert back.returncode == 0, back.stderr
    assert f"note: {SESSION} had been forgotten; --force recorded it again" in back.stderr
    assert SESSION in run_postrun("sessions", env=stored).stdout
    unknown = run_postrun("forget", "nope", env=stored)
    assert unknown.returncode == 1 and "no session nope" in unknown.stderr


@pytest.fixture
def capture(env: dict[str, str], root: Path, tmp_path: Path) -> Iterator[tuple[CaptureProcess, dict[str, str]]]:
    env.update(POSTRUN_CLINE_DIR=str(root), POSTRUN_DEBOUNCE_SECONDS="0.2", POSTRUN_POLL_SECONDS="0.5")
    process = CaptureProcess(env, tmp_path, "--log-level", "DEBUG")
    yield process, env
    process.kill()


def test_a_running_capture_does_not_record_a_forgotten_session_again(
    capture: tuple[CaptureProcess, dict[str, str]], root: Path
) -> None:
    process, env = capture
    process.wait_for_log(rf"(DEBUG|INFO) cline ingested {SESSION} ")
    assert run_postrun("forget", SESSION, "--yes", env=env).returncode == 0
    messages = root / SESSION / f"{SESSION}.messages.json"
    document = orjson.loads(messages.read_bytes())
    document["messages"].append(
        {"id": "msg_late", "role": "user", "content": [{"type": "text", "text": "more"}], "ts": 1790000200000}
    )
    messages.write_bytes(orjson.dumps(document))
    process.wait_for_log(rf"INFO cline {SESSION}: forgotten \(postrun forget\)")
    assert SESSION not in run_postrun("sessions", env=env).stdout
    assert len(process.lines(rf"cline {SESSION}: forgotten")) == 1


def test_excluded_workspaces_are_never_recorded(env: dict[str, str], root: Path, tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "cline" / "basic_act" / "data" / "sessions" / BASIC, root / BASIC)
    env.update(POSTRUN_CLINE_DIR=str(root), POSTRUN_EXCLUDE=f"/nowhere{os.pathsep}/home/dev/sh*")
    done = run_postrun("capture", "--once", env=env)
    assert done.returncode == 0, done.stderr
    assert f"cline {SESSION}: not recorded: workspace /home/dev/shop matches exclude '/home/dev/sh*'" in done.stderr
    listing = run_postrun("sessions", env=env).stdout
    assert BASIC in listing and SESSION not in listing
    shown = run_postrun("config", "show", env=env).stdout
    assert 'exclude = ["/nowhere", "/home/dev/sh*"]  (env POSTRUN_EXCLUDE)' in shown
    assert "excluded: /nowhere, /home/dev/sh*" in run_postrun("doctor", env=env).stdout

    # Excluding a workspace after its sessions were stored keeps them, and doctor says so.
    env["POSTRUN_EXCLUDE"] = "/home/dev/app"
    doctor = run_postrun("doctor", env=env).stdout
    assert f"1 stored session(s) were recorded before: {BASIC} (/home/dev/app)" in doctor
    assert BASIC in run_postrun("sessions", env=env).stdout


def test_an_excluded_sessions_transcript_is_never_read(env: dict[str, str], root: Path) -> None:
    """Its manifest says the workspace; its transcript (here torn, so reading it would fail) is
    not read, by capture or by ingest, at this start-up or any later one."""
    (root / SESSION / f"{SESSION}.messages.json").write_bytes(b'{"messages": [')
    env.update(POSTRUN_CLINE_DIR=str(root), POSTRUN_EXCLUDE="/home/dev/shop")
    for command in (("capture", "--once"), ("ingest", str(root / SESSION)), ("capture", "--once")):
        done = run_postrun(*command, env=env)
        assert f"{SESSION}: not recorded: workspace /home/dev/shop matches exclude" in done.stderr, command
        assert "parseable" not in done.stderr and "torn" not in done.stderr.replace("0 torn", ""), done.stderr


def test_stored_sessions_are_reflagged_when_the_rules_change(stored: dict[str, str], root: Path) -> None:
    db = Path(stored["POSTRUN_DB"])
    connection = apsw.Connection(str(db))
    codec.register(connection)  # step records are compressed; an index reads their flags
    # As an earlier version of the rules left it: no flags on the steps, an older rules version.
    for rowid, record in connection.execute("SELECT rowid, record FROM steps").fetchall():
        step = codec.load(record)
        step["flags"] = []
        connection.execute(
            "UPDATE steps SET record = ?, digest = 'old' WHERE rowid = ?", (codec.pack(orjson.dumps(step)), rowid)
        )
    connection.execute("DELETE FROM step_flags")
    connection.execute("UPDATE store_meta SET value = 'flags-0' WHERE key = 'flag_rules_version'")
    connection.close()
    assert run_postrun("sessions", "--flagged", env=stored).stdout == ""

    Path(root / SESSION / f"{SESSION}.messages.json").unlink()  # re-flagging never reads Cline's files
    basic = copy_data("cline/basic_act", root.parent / "basic")
    done = run_postrun("ingest", str(basic / BASIC), env=stored)
    assert done.returncode == 0, done.stderr
    assert "re-flagging (the flag rules changed): 1 session" in done.stderr
    assert "re-flagged 1 stored session under the current flag rules" in done.stderr
    assert "9 flagged" in run_postrun("sessions", env=stored).stdout
    history = run_postrun("show", SESSION, "--history", env=stored).stdout
    assert "changed  step toolu_cmds#1" in history  # the unflagged version is kept
    again = run_postrun("ingest", str(basic / BASIC), env=stored)
    assert "re-flag" not in again.stderr
