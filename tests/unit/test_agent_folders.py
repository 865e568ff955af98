"""Each agent's folder stands on its own: it imports nothing from another agent's folder.

Adding an agent touches its own folder and the registry, nothing else; and an ingest of one
agent's sessions does not pay for importing another's mapping (Codex's start-up imported all
of Cline's package for two time helpers).
"""

from __future__ import annotations

import ast
from pathlib import Path

import postrun.agents

AGENTS = Path(postrun.agents.__file__).parent
FOLDERS = sorted(path.name for path in AGENTS.iterdir() if path.is_dir() and (path / "__init__.py").exists())


def _imported(source: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            modules.add(node.module)
    return modules


def test_there_is_more_than_one_agent_folder() -> None:
    assert {"claude_code", "cline", "codex"} <= set(FOLDERS)


def test_no_agent_folder_imports_another_agents_modules() -> None:
    crossing = {
        f"{source.relative_to(AGENTS)} imports {module}"
        for folder in FOLDERS
        for source in (AGENTS / folder).rglob("*.py")
        for module in _imported(source)
        for other in FOLDERS
        if other != folder and (module == f"postrun.agents.{other}" or module.startswith(f"postrun.agents.{other}."))
    }
    assert not crossing, sorted(crossing)
