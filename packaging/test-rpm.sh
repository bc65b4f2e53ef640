#!/bin/sh
# Builds the .rpm and checks what `rpm -qlp` and friends say about it: the
# version (the same as the .deb's), the License field, that the package
# owns every directory it puts files in (so `rpm -e` leaves none behind),
# modes and owners under /etc/haroute, the conffiles, and the scripts that
# create the account and purge on erase. It does not install the package:
# this is a Debian machine. Needs rpm (apt-get install rpm).
#
# HAROUTE_BINARY packages an already-built binary instead of building one.
set -eu

cd "$(dirname "$0")/.."

fail() {
	echo "test-rpm: FAIL: $*" >&2
	exit 1
}

command -v rpm >/dev/null 2>&1 || fail "rpm not found: apt-get install rpm"
HAROUTE_VERSION=${HAROUTE_VERSION:-$(./packaging/version.sh)}
export HAROUTE_VERSION
rm -f dist/haroute-*.rpm
sh packaging/build.sh rpm
pkg=$(ls dist/haroute-*.rpm)
echo "test-rpm: built $pkg"

q() { rpm -qp "$@" "$pkg" 2>/dev/null; }

[ "$(q --qf '%{VERSION}')" = "$HAROUTE_VERSION" ] || fail "version $(q --qf '%{VERSION}'), want $HAROUTE_VERSION"
[ "$(q --qf '%{LICENSE}')" = Apache-2.0 ] || fail "License is '$(q --qf '%{LICENSE}')', want Apache-2.0"
q -R | grep -qx 'haproxy >= 2.6' || fail "does not require haproxy >= 2.6"

# Every directory holding one of the package's files is the package's,
# up to the directories the distribution owns (filesystem, systemd).
listing=$(q -l)
system_dirs='^(/|/etc|/usr|/usr/bin|/usr/lib|/usr/lib/systemd|/usr/lib/systemd/system|/usr/share|/usr/share/doc|/usr/share/licenses)$'
for path in $listing; do
	dir=$(dirname "$path")
	echo "$dir" | grep -Eq "$system_dirs" && continue
	echo "$listing" | grep -qx "$dir" || fail "$path is in $dir, which the package does not own"
done

# Modes and owners: "mode user group path".
modes=$(q --qf '[%{FILEMODES:perms} %{FILEUSERNAME} %{FILEGROUPNAME} %{FILENAMES}\n]')
for want in \
	'drwxr-xr-x root root /etc/haroute' \
	'drwxr-xr-x root root /etc/haroute/config' \
	'drwxr-x--- root haroute /etc/haroute/secrets' \
	'-rw-r--r-- root root /etc/haroute/config/routerconfig.yaml' \
	'-rwxr-xr-x root root /usr/bin/haroute' \
	'-rw-r--r-- root root /usr/lib/systemd/system/haroute.service' \
	'-rw-r--r-- root root /usr/share/licenses/haroute/LICENSE'; do
	echo "$modes" | grep -qxF -- "$want" || fail "no '$want' in the listing"
done
# The production skeleton only: no routes and no keys in /etc/haroute.
if echo "$modes" | grep ' /etc/haroute/' | grep -v -e '^d' -e ' /etc/haroute/README.md$' -e ' /etc/haroute/config/routerconfig.yaml$'; then
	fail "unexpected files under /etc/haroute (listed above)"
fi
q -c | grep -qx /etc/haroute/config/routerconfig.yaml || fail "routerconfig.yaml is not %config"

# The scripts: the account before unpacking (the secrets directory's
# group), and the erase branch (rpm's $1 = 0) of the purge.
scripts=$(q --scripts)
echo "$scripts" | grep -q '^preinstall scriptlet' || fail "no %pre"
echo "$scripts" | sed -n '/^preinstall scriptlet/,/^[a-z]* scriptlet/p' | grep -q 'useradd --system' || fail "%pre does not create the haroute account"
echo "$scripts" | sed -n '/^postuninstall scriptlet/,$p' | grep -q 'rm -rf /var/lib/haroute' || fail "%postun does not purge /var/lib/haroute"
echo "test-rpm: PASS ($(basename "$pkg"))"
