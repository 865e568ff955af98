#!/bin/sh
# Postrun's post-install script (deb postinst, rpm %post, Arch post_install/post_upgrade).
# Builds the virtualenv /opt/postrun from the wheels the package ships, offline, with the
# system python3: a virtualenv is not relocatable, so it cannot be shipped built. pip runs
# from its own bundled wheel, so neither python3-venv nor python3-pip is needed.
# It starts nothing and enables nothing for any user.
set -e

venv=/opt/postrun
wheels=/usr/lib/postrun/wheels
python=/usr/bin/python3

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "postrun: $python must be Python 3.11 or newer" >&2
    exit 1
fi
pip_wheel=$(ls "$wheels"/pip-*.whl | sort -V | tail -n 1)

rm -rf "$venv"
"$python" -m venv --without-pip "$venv"
# PIP_CONFIG_FILE=/dev/null: the machine's pip configuration (indexes, constraints) must not
# change what gets installed.
if ! PIP_CONFIG_FILE=/dev/null "$venv/bin/python" "$pip_wheel/pip" install \
    --quiet --no-index --find-links "$wheels" --no-cache-dir --disable-pip-version-check \
    --no-warn-script-location 'postrun[postgres]'; then
    rm -rf "$venv"
    echo "postrun: installing from $wheels failed (this package ships wheels for:" \
        "$(ls "$wheels" | sed -n 's/^apsw-.*-cp3\([0-9]*\)-.*/3.\1/p' | sort -uV | tr '\n' ' ')" \
        "and $python is $("$python" -c 'import platform; print(platform.python_version())'))" >&2
    exit 1
fi

cat <<'MESSAGE'

Postrun is installed as /usr/bin/postrun. Nothing was started or enabled.
To record your agents' sessions (Cline, Claude Code, Codex), run once as your user (not root):
    systemctl --user enable --now postrun
On a machine without a login session (SSH only, a server), also run once:
    loginctl enable-linger $USER
Configure it in ~/.config/postrun/config.toml (the service does not read your shell's
POSTRUN_* variables); `postrun doctor` checks the setup. After an upgrade, a running
capture keeps the old version until `systemctl --user restart postrun`.

MESSAGE
