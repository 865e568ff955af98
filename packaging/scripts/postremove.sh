#!/bin/sh
# Postrun's post-removal script (deb postrm, rpm %postun, Arch post_remove).
# Deletes the virtualenv that the post-install script built; the package manager removes
# every file the package itself shipped. Users' data (~/.local/share/postrun, their
# configuration, their own unit files) stays.
set -e

case "$1" in
    # An upgrade: rpm (1 package left) and deb; the new version's post-install rebuilds it.
    1 | upgrade | failed-upgrade | abort-upgrade) exit 0 ;;
esac
rm -rf /opt/postrun
