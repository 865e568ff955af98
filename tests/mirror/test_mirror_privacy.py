"""What the team mirror must never hold: a forgotten session's history, a secret a redacted
export hides. Real `postrun` processes, a real PostgreSQL, every table scanned as text."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_postrun
from tests.mirror.conftest import Mirror
from tests.reliability.kit import Synthetic, synthetic_id

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
