"""Which paths a flag names: files that hold credentials, and edits outside the workspace.

``is_sensitive_path`` serves both the step rule (a read or edit of such a file) and the
command rule (``cat .env``, ``grep KEY .env``); ``outside_workspace`` the read and edit
rule. Pure: paths in, answers out.
"""

from __future__ import annotations

import posixpath
import re

TEMP_DIRS = ("/tmp/", "/var/tmp/", "/private/tmp/", "/var/folders/", "/private/var/folders/", "/dev/shm/")

# Files that hold credentials (matched on the path's last components), and the variables that
# name one (``cat $KUBECONFIG``).
_SENSITIVE_PATH = re.compile(
    r"""(?x)(?:^|/)(?:
        \.env(?!\.(?:example|sample|template|dist|defaults)$)(?:\.[^/]+)? | \.envrc
      | \.ssh/(?!known_hosts$|config$|[^/]*\.pub$)[^/]+ | id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?
      | [^/]+\.(?:pem|key|p12|pfx) | \.npmrc | \.pypirc | \.netrc | _netrc | \.git-credentials
      | \.aws/(?:credentials|config) | \.config/gcloud/[^/]+ | \.azure/[^/]+ | \.kube/config | kubeconfig[^/]*
      | \.docker/config\.json | [^/]+\.tfstate(?:\.backup)? | \.terraformrc | terraform\.tfvars
      | \.pgpass | \.my\.cnf | \.mylogin\.cnf | \.boto | \.s3cfg | \.htpasswd | \.vault-token | \.databrickscfg
      | \.config/gh/hosts\.ya?ml | \.config/hub | \.config/op/[^/]+ | \.gnupg/[^/]+ | \.password-store/.+
      | \.cargo/credentials(?:\.toml)? | \.gem/credentials | (?:\.config/)?composer/auth\.json | auth\.json
      | \.terraform\.d/credentials\.tfrc\.json | credentials(?:\.[\w-]+)?\.json | client_secrets?[^/]*\.json
      | service[-_]account[^/]*\.json | secrets?\.(?:ya?ml|json|toml|env) | \.streamlit/secrets\.toml
      | [^/]+\.(?:keystore|jks|kdbx|ovpn) | etc/(?:shadow|gshadow|sudoers) | token\.json
      | \$\{?(?:KUBECONFIG|GOOGLE_APPLICATION_CREDENTIALS|AWS_SHARED_CREDENTIALS_FILE|PGPASSFILE|NETRC)(?::?-[^}]*)?\}?
    )$"""
)


# A home folder as a shell names it, and a Windows drive's root (``C:/``).
_HOME_WORDS = ("$HOME/", "${HOME}/", "$USERPROFILE/", "%USERPROFILE%/")
_DRIVE = re.compile(r"[A-Za-z]:/")


def is_sensitive_path(path: str) -> bool:
    """``path`` names a credentials file; a trailing glob is read as what it starts with
    (``grep KEY .env*`` reads ``.env`` among others)."""
    return bool(_SENSITIVE_PATH.search(path.replace("\\", "/").rstrip("*?")))


def plain_path(path: str) -> str:
    """``path`` with ``/`` for ``\\`` and a shell's home folder as ``~``."""
    path = path.replace("\\", "/")
    if path[:1] not in ("$", "%"):
        return path
    home = next((word for word in _HOME_WORDS if path.startswith(word)), None)
    return path if home is None else "~/" + path[len(home) :]


def outside_workspace(path: str, workspace_root: str) -> bool:
    """An absolute (or ``~``) path outside the workspace root and not in a temp folder."""
    if not workspace_root or not path:
        return False
    path = plain_path(path)
    root = posixpath.normpath(plain_path(workspace_root))
    if path.startswith("~"):
        return not root.startswith("~")
    drive = ":" in path[1:2] and bool(_DRIVE.match(path))
    if drive or ":" in root[1:2]:  # Windows: a drive's paths, its letter and names either case
        path, root = path.lower(), root.lower()
    full = posixpath.normpath(path if drive else posixpath.join(root, path))
    if full == root or full.startswith(root.rstrip("/") + "/"):
        return False
    return not (full + "/").startswith(TEMP_DIRS)
