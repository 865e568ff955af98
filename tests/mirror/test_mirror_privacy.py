"""What the team mirror must never hold: a forgotten session's history, a secret a redacted
export hides. Real `postrun` processes, a real PostgreSQL, every table scanned as text."""

from __future__ import annotations

from pathlib import Path

import orjson

from postrun.mirror.schema import SCHEMA_VERSION
from postrun.review.redact import RULES_VERSION
from postrun.review.secrets import find_secrets
from tests.conftest import run_postrun
from tests.mirror.conftest import Mirror
from tests.reliability.kit import Synthetic, synthetic_id
from tests.support import mirror_check
from tests.support.secret_samples import SAMPLES

TABLES = ("sessions", "segments", "actors", "turns", "steps", "history")


def mirror_text(mirror: Mirror) -> str:
    """Every row of every mirror table, as PostgreSQL prints it."""
    with mirror.server.admin(mirror.database) as admin:
        return "\n".join(
            str(row[0]) for table in TABLES for row in admin.execute(f"SELECT t::text FROM postrun.{table} t")
        )


def ok(*args: str, env: dict[str, str]) -> str:
    result = run_postrun(*args, env=env)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def test_a_forget_then_ingest_force_before_the_push_leaves_no_earlier_version_in_the_mirror(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    marker = "planted-marker-of-an-earlier-version"
    root = tmp_path / "cline"
    env = mirror_env | {"POSTRUN_CLINE_DIR": str(root)}
    session = Synthetic(synthetic_id(4), seed=4)
    for _ in range(4):
        session.grow()
    first_reply = next(m for m in session.messages if m["role"] == "assistant")
    first_reply["content"][0]["text"] = f"the first version: {marker}"
    session.write(root)
    ok("ingest", str(root), env=env)
    ok("mirror", "push", env=env)
    first_reply["content"][0]["text"] = "the second version, without it"
    session.write(root)
    ok("ingest", str(root), env=env)
    ok("mirror", "push", env=env)
    assert marker in mirror_text(mirror)  # the earlier version is in the mirror's history
    ok("forget", session.session_id, "--yes", env=env)
    ok("ingest", "--force", str(root), env=env)  # before the forget was pushed
    ok("mirror", "push", env=env)
    held = mirror_text(mirror)
    assert session.session_id in held  # recorded again, as the store holds it now
    assert marker not in held


def with_secrets(root: Path, index: int = 7) -> tuple[Synthetic, list[str]]:
    """A session holding planted secrets where each kind of record keeps text: the prompt (a
    turn), a command's output (a step's payload), a reply that is edited away later (history)."""
    session = Synthetic(synthetic_id(index), seed=index)
    for _ in range(12):
        session.grow()
    aws, aws_line = SAMPLES["aws_key"]
    github, github_line = SAMPLES["github_token"]
    stripe, stripe_line = SAMPLES["stripe_key"]
    session.messages[0]["content"][0]["text"] = f'<user_input mode="act">deploy with {github_line}</user_input>'
    results = [m for m in session.messages if m["content"][0].get("name") == "run_commands"]
    results[0]["content"][0]["content"][0]["result"] = f"$ cat ~/.aws/credentials\n{aws_line}\n"
    reply = next(m for m in session.messages if m["role"] == "assistant")
    reply["content"][0]["text"] = f"found {stripe_line} in the config"
    session.write(root)
    return session, [aws, github, stripe]


def stored_with_secrets(
    tmp_path: Path, mirror_env: dict[str, str]
) -> tuple[dict[str, str], Path, Synthetic, list[str]]:
    """``with_secrets``' session written and ingested: the environment, Cline's root, it, its secrets."""
    root = tmp_path / "cline"
    env = mirror_env | {"POSTRUN_CLINE_DIR": str(root)}
    session, planted = with_secrets(root)
    ok("ingest", str(root), env=env)
    return env, root, session, planted


def secrets_in_export(env: dict[str, str], session_id: str) -> list[str]:
    """Every secret the one detector finds in the session's unredacted export: what a redacted
    export hides."""
    exported = orjson.loads(ok("export", session_id, "--format", "json", "--no-redact", env=env))
    texts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(exported)
    return [text[secret.start : secret.end] for text in texts for secret in find_secrets(text)]


def test_no_secret_a_redacted_export_hides_reaches_any_mirror_table(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env, root, session, planted = stored_with_secrets(tmp_path, mirror_env)
    hidden = secrets_in_export(env, session.session_id)
    assert set(planted) <= set(hidden)
    redacted = ok("export", session.session_id, "--format", "json", "--redact", env=env)
    assert not [secret for secret in hidden if secret in redacted]  # what a redacted export hides
    ok("mirror", "push", env=env)
    reply = next(m for m in session.messages if m["role"] == "assistant")
    reply["content"][0]["text"] = "found nothing in the config"  # the earlier version goes to history
    session.write(root)
    ok("ingest", str(root), env=env)
    ok("mirror", "push", env=env)
    held = mirror_text(mirror)
    assert [secret for secret in hidden if secret in held] == []
    with mirror.server.admin(mirror.database) as admin:
        payload = admin.execute(
            "SELECT payload ->> 'stdout' FROM postrun.steps WHERE payload ->> 'stdout' LIKE '%credentials%'"
        ).fetchone()
        assert payload is not None and "[REDACTED:" in payload[0], payload  # the output is there, masked
        assert admin.execute("SELECT count(*) FROM postrun.history").fetchone() != (0,)
        assert admin.execute("SELECT DISTINCT redaction FROM postrun.sessions").fetchall() == [(RULES_VERSION,)]
        assert mirror_check.differences(Path(env["POSTRUN_DB"]), admin) == []  # the redacted store, exactly


def test_the_opt_out_is_explicit_shown_and_undone_by_a_push_with_redaction(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env, _, _, planted = stored_with_secrets(tmp_path, mirror_env)
    clear = env | {"POSTRUN_MIRROR_REDACT": "false"}
    assert "mirror_redact = false  (env POSTRUN_MIRROR_REDACT)" in ok("config", "show", env=clear)
    assert "mirror_redact = true  (default)" in ok("config", "show", env=env)
    ok("mirror", "push", env=clear)
    assert all(secret in mirror_text(mirror) for secret in planted)  # in clear, as asked
    status = run_postrun("mirror", "status", env=clear)
    assert "redaction: off (mirror_redact = false: records are sent as stored, secrets in clear)" in status.stdout
    assert status.returncode == 0, status.stdout
    doctor = run_postrun("doctor", env=clear).stdout
    assert "secrets sent in clear (mirror_redact = false)" in doctor
    # Redaction back on: the sessions pushed in clear are not what this store pushes now.
    behind = run_postrun("mirror", "status", env=env)
    assert behind.returncode == 1 and "redaction: on" in behind.stdout
    assert "differs: the mirror holds 1 session otherwise" in behind.stdout, behind.stdout
    ok("mirror", "push", env=env)
    assert [secret for secret in planted if secret in mirror_text(mirror)] == []
    assert run_postrun("mirror", "status", env=env).returncode == 0


def test_a_mirror_filled_in_clear_by_schema_1_is_migrated_and_sent_again_redacted(
    tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror
) -> None:
    env, _, _, planted = stored_with_secrets(tmp_path, mirror_env)
    ok("mirror", "push", env=env | {"POSTRUN_MIRROR_REDACT": "false"})
    with mirror.server.admin(mirror.database) as admin:  # what a Postrun of schema 1 left
        admin.execute("ALTER TABLE postrun.sessions DROP COLUMN redaction")
        admin.execute("UPDATE postrun.schema_version SET version = 1")
    assert all(secret in mirror_text(mirror) for secret in planted)
    status = run_postrun("mirror", "status", env=env)
    assert status.returncode == 1, status.stdout
    assert "schema postrun version 1 (the next push migrates it)" in status.stdout
    assert "differs: the mirror holds 1 session otherwise" in status.stdout
    ok("mirror", "push", env=env)
    assert [secret for secret in planted if secret in mirror_text(mirror)] == []
    with mirror.server.admin(mirror.database) as admin:
        assert admin.execute("SELECT version FROM postrun.schema_version").fetchone() == (SCHEMA_VERSION,)
        assert mirror_check.differences(Path(env["POSTRUN_DB"]), admin) == []
