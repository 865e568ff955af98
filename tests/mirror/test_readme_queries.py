"""The README's three queries run against a mirror of real fixtures (column names, joins, types)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.conftest import REPO, run_postrun
from tests.mirror.conftest import Mirror
from tests.support.capture_process import copy_data


def readme_queries() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Team mirror") :]
    block = re.search(r"```sql\n(.*?)```", section, flags=re.S)
    assert block is not None
    return [query.strip() for query in block.group(1).split(";") if query.strip()]


def test_the_readme_queries_run_on_a_mirror(tmp_path: Path, mirror_env: dict[str, str], mirror: Mirror) -> None:
    # One fixture with failed commands and a cost, one with an edit: every query has rows.
    root = copy_data("cline-real/b_run_commands", tmp_path / "cline")
    edits_root = copy_data("cline-real/a_read_edit", tmp_path / "cline-edits")
    for session in edits_root.iterdir():
        shutil.copytree(session, root / session.name)
    env = mirror_env | {"POSTRUN_CLINE_DIR": str(root)}
    assert run_postrun("capture", "--once", env=env).returncode == 0
    assert run_postrun("mirror", "push", env=env).returncode == 0
    queries = readme_queries()
    assert len(queries) == 3
    with mirror.server.admin(mirror.database) as admin:
        edited = admin.execute("SELECT path FROM postrun.steps WHERE type = 'edit' LIMIT 1").fetchone()
        assert edited is not None, "the fixtures hold an edit"
        results = []
        for query in queries:
            # Rows from the fixtures' own week and files, not the README's examples.
            query = query.replace("date_trunc('week', now())", "timestamptz '2000-01-01'")
            query = query.replace("'/home/ada/app/src/parser.py'", f"'{edited[0]}'")
            results.append(admin.execute(query).fetchall())
    failed, cost, edits = results
    assert failed and all(row[3] for row in failed)  # commands that failed, with their text
    assert cost and cost[0][0] and cost[0][3] >= 1
    assert edits and all(row[4] is not None or row[5] is not None for row in edits)  # old or new text
