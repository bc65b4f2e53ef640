#!/bin/sh
# Prints haroute's version, the one `haroute version` reports and the
# packages carry (the Makefile and packaging/build.sh both call this):
#
#   v1.2.3 tagged on HEAD        1.2.3
#   3 commits after v1.2.3       1.2.3+git20261123.ed834c2
#   no v* tag at all             0.0.0~git20261123.ed834c2
#   uncommitted changes          … with ".dirty" appended
#   no git checkout              0.0.0~unknown
#
# The date is the commit's (not the build's), so a rebuild of the same
# commit gets the same version. "~" sorts before anything, so any tagged
# release upgrades an untagged build; "+git" sorts after the tag it follows.
# Both are valid Debian and RPM versions.
set -eu
cd "$(dirname "$0")/.."

if ! sha=$(git rev-parse --short=7 HEAD 2>/dev/null); then
	echo 0.0.0~unknown
	exit 0
fi
date=$(git log -1 --format=%cd --date=format:%Y%m%d HEAD)
dirty=
if ! git diff --quiet HEAD -- 2>/dev/null; then
	dirty=.dirty
fi
if tag=$(git describe --tags --exact-match --match 'v[0-9]*' HEAD 2>/dev/null); then
	version=${tag#v}
elif tag=$(git describe --tags --abbrev=0 --match 'v[0-9]*' HEAD 2>/dev/null); then
	version=${tag#v}+git$date.$sha
else
	version=0.0.0~git$date.$sha
fi
# A tag such as v1.2.3-rc1 would put a "-" in the version, which Debian
# reads as a revision and RPM refuses: make it a "~" (pre-release).
echo "$version$dirty" | tr - '~'
