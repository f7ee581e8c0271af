#!/usr/bin/env bash
# make deb: binary packages from debian/ with dpkg-buildpackage, built in a copy of the source under OUT
# (default build-deb/) so that the repository stays clean; the .deb, .buildinfo and .changes land in OUT,
# then lintian checks them (errors fail; warnings must be overridden with a reason in debian/).
# DEB_BUILD_OPTIONS defaults to nocheck: the unit tests need suites fetched by npm (make check runs them);
# `make deb DEB_BUILD_OPTIONS=` runs them in the package build too.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-deb}
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS-nocheck}
profiles=()
[[ " $DEB_BUILD_OPTIONS " == *" nocheck "* ]] && profiles=(-Pnocheck)

version=$(dpkg-parsechangelog -S Version)
src="$out/protokube-${version%-*}"
rm -rf "$out"
mkdir -p "$src"
# The source as it is in this directory (uncommitted changes included), without build trees.
tar --exclude-vcs --exclude='./build*' --exclude='./obj-*' --exclude='node_modules' --exclude='__pycache__' \
        -cf - . | tar -xf - -C "$src"
(cd "$src" && dpkg-buildpackage -b -us -uc "${profiles[@]}" >../dpkg-buildpackage.log 2>&1) || {
        tail -40 "$out/dpkg-buildpackage.log"
        echo "make deb: dpkg-buildpackage failed; the whole log is $out/dpkg-buildpackage.log" >&2
        exit 1
}
rm -rf "$src"
ls -1 "$out"/*.deb
changes=$(ls "$out"/*.changes)
lintian --fail-on error --info --display-info "$changes"
