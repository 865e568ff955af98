"""Command rules about shared state beyond the workspace: git history and remotes, databases,
clusters, infrastructure, containers, cloud storage, the machine itself.

Each test looks at one simple command and the words its wrappers run, and returns the words
it matched, or None. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from postrun.review.argv import base, git_command, operands, positionals, quoted, short_flags
from postrun.review.scripts import fed_text
from postrun.review.shell import Command

Test = Callable[[Command, tuple[str, ...]], str | None]

_SQL_CLIENTS = frozenset(
    {
        *("psql", "pgcli", "mysql", "mariadb", "mycli", "sqlite3", "litecli", "sqlcmd", "duckdb", "cqlsh"),
        *("clickhouse-client", "clickhouse", "cockroach", "snowsql", "usql", "bq", "mongosh", "mongo"),
    }
)
_DESTRUCTIVE_STATEMENT = re.compile(
    r"""(?ix)\b(?:drop\s+(?:table|database|schema)|truncate\s+(?:table\s+)?\w
      | delete\s+from\s+[\w."`]+\s*(?:;|$|"|')          # a DELETE without WHERE
      | \.dropdatabase\s*\( | \.drop\s*\(\s*\) | \.deletemany\s*\(\s*\{\s*\}\s*\))"""
)
_CLUSTER_WIDE = frozenset(
    {
        *("ns", "namespace", "namespaces", "pv", "pvc", "persistentvolume", "persistentvolumes", "node", "nodes"),
        *("persistentvolumeclaim", "persistentvolumeclaims", "crd", "crds", "customresourcedefinition"),
    }
)
_REDIS_VALUE_OPTIONS = frozenset({"-h", "-p", "-s", "-a", "-u", "-n", "--user", "--pass", "-r", "-i"})
_DESTROYERS = frozenset({"terraform", "tofu", "terragrunt", "pulumi", "cdk", "cdktf", "sst"})
# Global options that take the next word as their value, before a tool's verb
# (`kubectl -n prod delete ns x`, `aws --profile prod s3 rm …`): their value is no operand.
_KUBECTL_VALUE_OPTIONS = frozenset(
    {
        *("-n", "--namespace", "--context", "--cluster", "--kubeconfig", "--user", "-s", "--server"),
        *("-l", "--selector", "-o", "--output", "--field-selector", "--token", "--as", "--request-timeout"),
    }
)
_HELM_VALUE_OPTIONS = frozenset({"-n", "--namespace", "--kube-context", "--kubeconfig", "--kube-token"})
_DOCKER_VALUE_OPTIONS = frozenset({"--context", "-c", "-H", "--host", "--config", "-l", "--log-level"})
_AWS_VALUE_OPTIONS = frozenset(
    {
        *("--profile", "--region", "--endpoint-url", "--output", "--query", "--ca-bundle", "--color"),
        *("--cli-read-timeout", "--cli-connect-timeout", "--cli-binary-format"),
    }
)
_HELP = frozenset({"-h", "-help", "--help"})


def git_push(argv: tuple[str, ...]) -> tuple[str, ...] | None:
    git = git_command(argv)
    return git[1] if git is not None and git[0] == "push" else None


def force_push(command: Command, argv: tuple[str, ...]) -> str | None:
    args = git_push(argv)
    if args is None:
        return None
    forced = "--force" in args or "--mirror" in args or "f" in short_flags(args)
    if forced or any(arg.startswith("+") for arg in positionals(args)):
        return quoted(argv)
    return None


def lease_push(command: Command, argv: tuple[str, ...]) -> str | None:
    args = git_push(argv)
    if args is None or force_push(command, argv) is not None:
        return None
    if any(arg.startswith(("--force-with-lease", "--force-if-includes")) for arg in args):
        return quoted(argv)
    return None


def deletes_remote_branch(command: Command, argv: tuple[str, ...]) -> str | None:
    args = git_push(argv)
    if args is not None and ("--delete" in args or "d" in short_flags(args) or any(a.startswith(":") for a in args)):
        return quoted(argv)
    return None


def git_subcommand(name: str, check: Callable[[tuple[str, ...]], bool]) -> Test:
    def test(command: Command, argv: tuple[str, ...]) -> str | None:
        git = git_command(argv)
        return quoted(argv) if git is not None and git[0] == name and check(git[1]) else None

    return test


def discards_changes(command: Command, argv: tuple[str, ...]) -> str | None:
    """``git checkout -- .``, ``git restore .``: every uncommitted change in the tree, gone."""
    git = git_command(argv)
    if git is None or git[0] not in ("checkout", "restore"):
        return None
    paths = positionals(git[1])
    return quoted(argv) if "--staged" not in git[1] and any(p in (".", "*", ":/") for p in paths) else None


def expires_reflog(command: Command, argv: tuple[str, ...]) -> str | None:
    """``git reflog expire --expire=now``, ``git gc --prune=now``: what a reset lost, lost for good."""
    git = git_command(argv)
    if git is None:
        return None
    now = any(arg in ("--expire=now", "--expire=all", "--prune=now", "--prune=all") for arg in git[1])
    return quoted(argv) if now and git[0] in ("reflog", "gc") else None


def destructive_sql(command: Command, argv: tuple[str, ...]) -> str | None:
    """DROP/TRUNCATE, a DELETE without WHERE, FLUSHALL, dropDatabase(): given to a database client
    (in its words, a here-document or echoed into it), never text a tool searches or prints."""
    if not argv:
        return None
    name = base(argv[0])
    if name == "redis-cli":
        return _flushes(argv, fed_text(command))
    if name not in _SQL_CLIENTS and not _runs_database(argv):
        return None
    texts = [" ".join(argv[1:]), fed_text(command) or ""]
    match = next((m for m in map(_DESTRUCTIVE_STATEMENT.search, texts) if m), None)
    return quoted((match.group(0),)) if match else None


def _flushes(argv: tuple[str, ...], fed: str | None) -> str | None:
    """``redis-cli [-h host …] FLUSHALL`` (or FLUSHDB), in its words or the commands fed to it."""
    index = 1
    while index < len(argv) and argv[index].startswith("-"):
        index += 2 if argv[index] in _REDIS_VALUE_OPTIONS else 1
    verbs = [argv[index]] if index < len(argv) else []
    verbs += [line.split(maxsplit=1)[0] for line in (fed or "").splitlines() if line.strip()]
    return next((verb for verb in verbs if verb.lower() in ("flushall", "flushdb")), None)


def _runs_database(argv: tuple[str, ...]) -> bool:
    words = argv[1:4]
    return base(argv[0]) in ("rails", "prisma", "npx", "supabase", "wrangler") and any(
        word in ("dbconsole", "db", "execute", "d1") for word in words
    )


def drops_database(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv:
        return None
    name = base(argv[0])
    words = list(argv)
    if name == "dropdb":
        return quoted(argv)
    if "prisma" in words and words[words.index("prisma") + 1 : words.index("prisma") + 3] == ["migrate", "reset"]:
        return quoted(argv)
    drops = any(word.startswith(("db:drop", "db:reset", "pg:reset")) for word in words)
    if drops and any(base(word) in ("rails", "rake", "heroku") for word in words):
        return quoted(argv)
    return None


def deletes_cluster_state(command: Command, argv: tuple[str, ...]) -> str | None:
    """``kubectl delete ns x``, ``kubectl delete pods --all -A``, a PVC, a node; ``helm uninstall``."""
    name = base(argv[0]) if argv else ""
    if name == "helm" and operands(argv[1:], _HELM_VALUE_OPTIONS)[:1] in (["uninstall"], ["delete"], ["del"]):
        return quoted(argv)
    words = operands(argv[1:], _KUBECTL_VALUE_OPTIONS)
    if name not in ("kubectl", "oc", "k") or words[:1] != ["delete"]:
        return None
    kinds = {kind for operand in words[1:2] for kind in operand.lower().split(",")}
    everywhere = {"--all", "-A", "--all-namespaces"} & set(argv)
    return quoted(argv) if kinds & _CLUSTER_WIDE or everywhere else None


def destroys_infrastructure(command: Command, argv: tuple[str, ...]) -> str | None:
    """``terraform destroy``, ``terraform apply -destroy``, ``pulumi destroy``, ``cdk destroy``,
    ``terragrunt run-all destroy`` (or ``run --all destroy``); not their help."""
    if not argv or base(argv[0]) not in _DESTROYERS or _HELP & set(argv):
        return None
    words = positionals(argv[1:])
    if base(argv[0]) == "terragrunt" and words[:1] in (["run-all"], ["run"]):
        words = words[1:]
    destroy = words[:1] == ["destroy"] or (words[:1] == ["apply"] and ({"-destroy", "--destroy"} & set(argv)))
    return quoted(argv) if destroy else None


def prunes_containers(command: Command, argv: tuple[str, ...]) -> str | None:
    """``docker system prune -a``/``--volumes``, ``docker volume prune``/``rm``, ``compose down -v``."""
    if not argv or base(argv[0]) not in ("docker", "podman", "docker-compose"):
        return None
    words = operands(argv[1:], _DOCKER_VALUE_OPTIONS)
    flags = set(argv[1:])
    everything = "a" in short_flags(argv[1:]) or {"--all", "--volumes"} & flags
    if words[:2] == ["system", "prune"] and everything:
        return quoted(argv)
    if words[:1] == ["volume"] and words[1:2] in (["prune"], ["rm"]):
        return quoted(argv)
    down = words[:2] == ["compose", "down"] or (base(argv[0]) == "docker-compose" and words[:1] == ["down"])
    return quoted(argv) if down and ({"-v", "--volumes"} & flags) else None


def deletes_cloud_resources(command: Command, argv: tuple[str, ...]) -> str | None:
    """``aws s3 rm --recursive``, ``aws s3 rb``, ``aws … delete-*``/``terminate-*``, ``gsutil rm -r``,
    ``gcloud … delete``, ``az … delete``, ``heroku apps:destroy``, ``fly apps destroy``."""
    if not argv:
        return None
    name = base(argv[0])
    words = operands(argv[1:], _AWS_VALUE_OPTIONS) if name == "aws" else positionals(argv[1:])
    recursive = "r" in short_flags(argv[1:]) or "--recursive" in argv
    if name == "aws":
        s3 = (words[:2] in (["s3", "rm"],) and recursive) or words[:2] == ["s3", "rb"]
        api = any(op.startswith(("delete-", "terminate-")) for op in words[1:2])
        return quoted(argv) if s3 or api else None
    if name == "gsutil":
        return quoted(argv) if (words[:1] == ["rm"] and recursive) or words[:1] == ["rb"] else None
    if name in ("gcloud", "az", "doctl", "linode-cli", "hcloud") and "delete" in words:
        return quoted(argv)
    if name in ("heroku", "fly", "flyctl") and any(op in ("apps:destroy", "destroy") for op in words[:2]):
        return quoted(argv)
    return None


def elevated(command: Command, argv: tuple[str, ...]) -> str | None:
    raw = command.argv
    return quoted(raw) if raw and base(raw[0]) in ("sudo", "doas", "pkexec", "run0") else None


def world_writable(command: Command, argv: tuple[str, ...]) -> str | None:
    if argv and base(argv[0]) == "chmod" and any(arg in ("777", "0777", "a+rwx", "ugo+rwx") for arg in argv[1:]):
        return quoted(argv)
    return None


def publishes(command: Command, argv: tuple[str, ...]) -> str | None:
    if not argv or base(argv[0]) not in ("npm", "pnpm", "yarn") or "--dry-run" in argv:
        return None
    operands = positionals(argv[1:])
    if operands[:1] in (["publish"], ["unpublish"]) or operands[:2] == ["npm", "publish"]:
        return quoted(argv)
    return None


def stops_the_machine(command: Command, argv: tuple[str, ...]) -> str | None:
    """``shutdown``, ``reboot``, ``halt``, ``poweroff``, ``systemctl reboot``, ``init 0``."""
    if not argv:
        return None
    name = base(argv[0])
    operands = positionals(argv[1:])
    if name in ("shutdown", "reboot", "halt", "poweroff") and "--help" not in argv:
        return quoted(argv)
    if (name == "systemctl" and operands[:1] in (["reboot"], ["poweroff"], ["halt"])) or (
        name in ("init", "telinit") and operands[:1] in (["0"], ["6"])
    ):
        return quoted(argv)
    return None
