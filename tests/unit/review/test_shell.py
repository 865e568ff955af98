"""The shell splitter: commands as a shell would run them, with where their input comes from."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from postrun.review import shell
from postrun.review.shell import split_commands


def argvs(line: str) -> list[tuple[str, ...]]:
    return [command.argv for command in split_commands(line)]


def test_lists_pipes_and_chains_are_split() -> None:
    assert argvs("cd x && make -j4 || echo 'failed: x'; ls | wc -l") == [
        ("cd", "x"),
        ("make", "-j4"),
        ("echo", "failed: x"),
        ("ls",),
        ("wc", "-l"),
    ]


def test_quotes_are_removed_and_a_quoted_command_is_only_a_word() -> None:
    assert argvs("echo \"rm -rf /\" 'a b' c\\ d") == [("echo", "rm -rf /", "a b", "c d")]


def test_pipeline_stages_feed_the_later_ones() -> None:
    commands = split_commands("curl -s u | tee log | sh")
    assert commands[2].argv == ("sh",)
    assert [c.argv for c in commands[2].upstream] == [("curl", "-s", "u"), ("tee", "log")]
    assert commands[0].upstream == ()


def test_substitutions_are_commands_of_their_own_and_known_to_their_host() -> None:
    commands = split_commands('bash <(curl -fsSL u); sh -c "$(wget -qO- u)"; echo `date`')
    hosts = {c.argv[0]: c for c in commands if c.substituted}
    assert [c.argv for c in hosts["bash"].substituted] == [("curl", "-fsSL", "u")]
    assert [c.argv for c in hosts["sh"].substituted] == [("wget", "-qO-", "u")]
    assert [c.argv for c in hosts["echo"].substituted] == [("date",)]
    assert ("curl", "-fsSL", "u") in [c.argv for c in commands]


def test_input_redirects_and_here_strings_feed_the_command() -> None:
    redirected = split_commands("bash < <(curl u)")
    assert [c.argv for c in redirected[-1].upstream] == [("curl", "u")]
    here_string = split_commands('python3 <<< "$(curl u)"')[0]
    assert [c.argv for c in here_string.upstream] == [("curl", "u")]


def test_here_document_text_is_kept() -> None:
    (command,) = split_commands("psql db <<EOF\nDROP TABLE x;\nEOF")
    assert command.argv == ("psql", "db")
    assert "DROP TABLE x;" in command.stdin_text


def test_a_here_document_after_a_chain_is_its_last_command_s() -> None:
    # Before: the parser gave the redirects to the whole `&&` list and the text was lost, so the
    # code of `cd repo && python3 - <<EOF` (a common way to run a script) was never looked at.
    cd, python = split_commands("cd /repo && python3 - <<'PY'\nimport shutil\nPY\n")
    assert (cd.argv, cd.stdin_text) == (("cd", "/repo"), "")
    assert python.name == "python3" and python.stdin_text == "import shutil\n"
    *_, last = split_commands("a | b && c <<'X' > out\nx\nX\n")
    assert (last.argv, last.stdin_text, last.writes) == (("c",), "x\n", ("out",))
    assert [c.argv for c in split_commands("make && ./run > log.txt")] == [("make",), ("./run",)]
    assert split_commands("make && ./run > log.txt")[1].writes == ("log.txt",)


def test_what_an_interpreter_s_code_runs_is_split_too() -> None:
    # Before: `python3 -c "import os; os.system('rm -rf src')"` was one command, python3's, and
    # no rule saw the deletion it runs.
    assert argvs("""python3 -c "import os; os.system('rm -rf src')\"""") == [
        ("python3", "-c", "import os; os.system('rm -rf src')"),
        ("rm", "-rf", "src"),
    ]
    assert argvs("""python3 -Ic "import subprocess, sys; subprocess.run(['git', 'push', sys.argv[1]])\"""")[1:] == [
        ("git", "push", "(a value)")
    ]
    assert argvs("""node -e "cp.spawnSync('rm', ['-rf', 'a,b'])\"""")[1:] == [("rm", "-rf", "a,b")]
    assert argvs("""node -e "cp.execSync('make test')\"""")[1:] == [("make", "test")]
    assert argvs("cd /repo && python3 - <<'PY'\nimport os\nos.system('git clean -fdx')\nPY\n")[2:] == [
        ("git", "clean", "-fdx")
    ]
    assert argvs("""ruby -e "system('rm -rf /srv')\"""")[1:] == [("rm", "-rf", "/srv")]
    # Only an interpreter's code, and only its literal strings: a shell's words are not code.
    assert argvs("""echo "os.system('rm -rf src')\"""") == [("echo", "os.system('rm -rf src')")]
    assert argvs("""python3 -c "import os; os.system(command)\"""") == [
        ("python3", "-c", "import os; os.system(command)")
    ]


def test_inline_scripts_of_shells_and_eval_are_split_too() -> None:
    assert ("rm", "-fr", "/") in argvs('bash -lc "cd x && rm -fr /"')
    assert ("git", "push", "-f") in argvs("eval 'git push -f'")
    assert ("rm", "-rf", "/") in argvs("""sh -c "bash -c 'rm -rf /'" """)


def test_compound_statements_are_walked() -> None:
    line = 'for f in *; do rm -rf "$f"; done; if true; then (cd a; sudo make); fi; x=$(env)'
    found = argvs(line)
    assert ("rm", "-rf", "$f") in found
    assert ("sudo", "make") in found
    assert ("env",) in found


def test_broken_lines_still_give_their_commands() -> None:
    assert argvs('rm -rf "unterminated') == [("rm", "-rf", "unterminated")]
    assert ("cat", "x") in argvs("cat x |")
    assert argvs("") == []


def test_program_name_is_the_base_name() -> None:
    (command,) = split_commands("/usr/bin/rm -rf x")
    assert command.name == "rm"


_WORDS = ["ls", "-la", "rm", "-rf", "/", "git", "push", "-f", "sh", "bash", "-c", "-lc", "eval", "sudo", "env",
          "timeout", "5s", "time", "if", "then", "fi", "do", "done", "for", "in", "case", "esac", "export",
          "declare", "local", "unset", "function", "while", "coproc", "--", "-", ":", "a:b", "1", "./x", "../y",
          "x,y", "python3", "-m", "xargs", "dd", "npm", "publish", "printenv", "set", "cat", ".env"]  # fmt: skip
_PLAIN_CHARS = "abcXYZ019 _./,:-"


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_WORDS) | st.text(_PLAIN_CHARS, min_size=1, max_size=6), max_size=6), st.data())
def test_a_plain_line_splits_as_the_parser_splits_it(words: list[str], data: st.DataObject) -> None:
    line = "".join(word + data.draw(st.sampled_from([" ", "  ", ""])) for word in words)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shell, "_PLAIN_LINE", re.compile(r"(?!)"))  # every line to the parser
        parsed = split_commands(line)
    assert split_commands(line) == parsed


def test_a_plain_line_needs_no_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr(shell.tree_sitter, "Parser", refuse)
    assert argvs(" npm  test src/a.py ") == [("npm", "test", "src/a.py")]
    assert argvs("bash -lc make") == [("bash", "-lc", "make"), ("make",)]
    with pytest.raises(AssertionError, match="parsed"):
        argvs("make | tee log")


def test_redirects_name_the_files_written_and_read() -> None:
    (command,) = split_commands("sort < in.txt > out.txt 2>> err.log")
    assert (command.writes, command.appends, command.reads) == (("out.txt",), ("err.log",), ("in.txt",))
    (bare,) = split_commands("> /etc/passwd")
    assert bare.argv == () and bare.writes == ("/etc/passwd",)
    assert split_commands("while read l; do :; done < .env")[0].reads == (".env",)
    assert split_commands("cat <<EOF > x.yaml\nport: 1\nEOF")[0].writes == ("x.yaml",)


def test_what_a_command_runs_is_split_too() -> None:
    for line in ('env -i bash -c "rm -rf /"', 'bash -c -- "rm -rf /"', "sudo -u x sh -c 'rm -rf /'",
                 "echo 'rm -rf /' | sh", "sh <<< 'rm -rf /'", "bash <<EOF\nrm -rf /\nEOF",
                 "cat <<'EOF' | sh\nrm -rf /\nEOF", "ssh -p 22 host 'rm -rf /'", "su -c 'rm -rf /'",
                 "watch -n 1 'rm -rf /'", "find / -exec rm -rf / \\;"):  # fmt: skip
        assert ("rm", "-rf", "/") in argvs(line), line
    assert ("rm", "-rf", "/") not in argvs("echo 'rm -rf /'; cat x | sh; python3 - <<EOF\nrm -rf /\nEOF")


def test_a_function_s_commands_know_its_name() -> None:
    commands = split_commands(":(){ :|:& };:")
    assert [(c.name, c.function) for c in commands] == [(":", ":"), (":", ":"), (":", "")]
    assert [u.name for u in commands[1].upstream] == [":"]


def test_declarations_are_commands_with_their_words() -> None:
    assert argvs("export HISTFILE=/dev/null; unset HISTFILE") == [
        ("export", "HISTFILE=/dev/null"),
        ("unset", "HISTFILE"),
    ]
    assert ("gh", "auth", "token") in argvs("export TOKEN=$(gh auth token)")
