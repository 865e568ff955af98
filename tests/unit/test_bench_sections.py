"""BENCHMARKS.md's one writer: each bench replaces its own section and nothing else."""

from __future__ import annotations

from pathlib import Path

from bench import sections
from bench.history import write_history
from bench.machine import Machine

MACHINE = Machine("CPU", 2, 4.0, "OS", "CPython 3.11", "3.50", "0.1.0", "abc1234", "2026-12-02 02:40 UTC")


def test_a_bench_replaces_its_own_section_and_leaves_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Benchmarks\n\nwritten by people\n")
    sections.write(path, "web", sections.stamped("python -m bench.web", ["| a |"], MACHINE))
    sections.write(path, "vault", ["vault, first"])
    sections.write(path, "web", sections.stamped("python -m bench.web --rounds 3", ["| b |"], MACHINE))
    text = path.read_text()
    assert text.startswith("# Benchmarks\n\nwritten by people\n\n")
    assert text.count(sections.markers("web")[0]) == 1
    assert "| b |" in text and "| a |" not in text
    assert "`python -m bench.web --rounds 3`" in text
    assert "- Postrun: 0.1.0 at commit abc1234" in text and "- Date: 2026-12-02 02:40 UTC" in text
    assert text.index("| b |") < text.index("vault, first")  # in place, not appended again


def test_a_section_written_before_the_markers_named_their_bench_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("before\n<!-- bench.mirror: begin -->\nold figures\n<!-- bench.mirror: end -->\nafter\n")
    sections.write(path, "mirror", ["new figures"])
    text = path.read_text()
    assert "old figures" not in text
    assert text.startswith("before\n") and text.endswith("\nafter\n")
    assert f"{sections.markers('mirror')[0]}\n\nnew figures\n\n{sections.markers('mirror')[1]}" in text


def test_the_command_shown_is_what_was_measured() -> None:
    argv = ["--peer", "agentsview", "--output", "/tmp/B.md", "--no-write", "--json", "/tmp/f.json", "--shape", "large"]
    assert sections.command_line("python -m bench", argv) == "python -m bench --peer agentsview --shape large"
    assert sections.command_line("python -m bench.claude", ["--output=/x", "--sessions", "200"]) == (
        "python -m bench.claude --sessions 200"
    )


def test_a_shape_of_exact_turns_gives_every_session_that_many(tmp_path: Path) -> None:
    totals = write_history(tmp_path / "sessions", seed=5, sessions=4, mean_turns=3, exact=True)
    assert {written.messages for written in totals.written} == {3 * 26}
