"""The dangerous-command rules: one table (``COMMAND_RULES``), one test per rule.

Each test looks at one simple command as ``postrun.review.shell`` split it (the commands a
command runs, ``bash -c "…"`` behind any wrapper, ``echo … | sh``, ``find -exec``, are
commands of their own), with the words its wrappers run (``postrun.review.argv``), and
returns the words it matched (quoted in the flag's reason) or None. The tests live by what
they guard: ``delete_rules`` (data), ``run_rules`` (code run, things shown) and
``infra_rules`` (git, databases, clusters, infrastructure, the machine).
``postrun.review.flags`` applies the table to every command a step runs. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from postrun.review import delete_rules as delete
from postrun.review import infra_rules as infra
from postrun.review import run_rules as run
from postrun.review.argv import QUOTED_CHARS, short_flags
from postrun.review.shell import Command

__all__ = ["COMMAND_RULES", "QUOTED_CHARS", "CommandRule", "Severity"]

Severity = Literal["info", "warn", "danger"]


@dataclass(frozen=True, slots=True)
class CommandRule:
    """A test over one simple command; ``test`` returns the words it matched, or None."""

    name: str  # the rule as a reason quotes it
    severity: Severity
    test: Callable[[Command, tuple[str, ...]], str | None]
    kind: str = "dangerous_command"


COMMAND_RULES: tuple[CommandRule, ...] = (
    CommandRule("rm -rf outside build output", "danger", delete.rm_recursive_force),
    CommandRule("find deleting outside build output", "danger", delete.find_deletes),
    CommandRule("interpreter code deleting a tree outside build output", "danger", delete.interpreter_deletes_tree),
    CommandRule("shred", "danger", delete.shreds),
    CommandRule("truncate -s 0", "danger", delete.truncates),
    CommandRule("overwrites a system file or disk", "danger", delete.overwrites_system_file),
    CommandRule("mkfs / dd of=/dev/… / wipefs", "danger", delete.wipes_disk),
    CommandRule("crontab -r", "danger", delete.removes_crontab),
    CommandRule("kill -1 (every process)", "danger", delete.kills_everything),
    CommandRule("chmod/chown -R of the root, home or system folders", "danger", delete.changes_everything),
    CommandRule("rsync --delete onto the root, home or system folders", "danger", delete.mirrors_over_everything),
    CommandRule("git push --force/--mirror/+refspec", "danger", infra.force_push),
    CommandRule("git reflog expire / gc --prune=now", "danger", infra.expires_reflog),
    CommandRule("download run by a shell or interpreter", "danger", run.download_to_shell),
    CommandRule("decoded text run by a shell or interpreter", "danger", run.decoded_to_shell),
    CommandRule("fork bomb", "danger", run.fork_bomb),
    CommandRule("DROP/TRUNCATE, DELETE without WHERE, FLUSHALL", "danger", infra.destructive_sql),
    CommandRule("database drop (dropdb, prisma migrate reset, rails db:drop)", "danger", infra.drops_database),
    CommandRule(
        "deletes cluster state (kubectl delete ns/pvc/--all, helm uninstall)", "danger", infra.deletes_cluster_state
    ),
    CommandRule("destroys infrastructure (terraform/pulumi destroy)", "danger", infra.destroys_infrastructure),
    CommandRule("docker system prune -a / volume prune", "danger", infra.prunes_containers),
    CommandRule("deletes cloud storage or resources", "danger", infra.deletes_cloud_resources),
    CommandRule("git push --force-with-lease", "warn", infra.lease_push),
    CommandRule("git push --delete", "warn", infra.deletes_remote_branch),
    CommandRule("git reset --hard", "warn", infra.git_subcommand("reset", lambda args: "--hard" in args)),
    CommandRule(
        "git clean -f",
        "warn",
        infra.git_subcommand("clean", lambda args: "f" in short_flags(args) or "--force" in args),
    ),
    CommandRule("git checkout/restore of the whole tree", "warn", infra.discards_changes),
    CommandRule("git branch -D", "warn", infra.git_subcommand("branch", lambda args: "D" in short_flags(args))),
    CommandRule(
        "git stash clear/drop", "warn", infra.git_subcommand("stash", lambda args: args[:1] in (("clear",), ("drop",)))
    ),
    CommandRule("appends to a system file", "warn", delete.appends_system_file),
    CommandRule("clears the shell history", "warn", delete.clears_history),
    CommandRule("installs a package from a URL or another index", "warn", run.installs_from_url),
    CommandRule("sudo/doas", "warn", infra.elevated),
    CommandRule("chmod 777", "warn", infra.world_writable),
    CommandRule("npm/pnpm/yarn publish", "warn", infra.publishes),
    CommandRule("shuts down or reboots the machine", "warn", infra.stops_the_machine),
    CommandRule("prints the environment (env, printenv, set)", "warn", run.prints_environment),
    CommandRule("reads a credentials file", "warn", run.reads_sensitive_file, kind="sensitive_read"),
)
