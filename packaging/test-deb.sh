#!/bin/sh
# Builds the .deb and checks it on this machine, as root: contents, install
# (user created, binary runs, unit and config in place), remove (binary
# gone, edited config kept), purge (config gone). CI runs it; it changes
# the system (installs and removes the package), so run it on a scratch
# machine or container.
#
# HAROUTE_BINARY packages an already-built binary instead of building one.
set -eu

cd "$(dirname "$0")/.."

fail() {
	echo "test-deb: FAIL: $*" >&2
	exit 1
}

if [ "$(id -u)" != 0 ]; then
	fail "must run as root (dpkg -i)"
fi
if dpkg-query -W -f='${Status}' haroute 2>/dev/null | grep -q 'install ok installed'; then
	fail "haroute is already installed here; refusing to replace it"
fi
if ! dpkg-query -W -f='${Status}' haproxy 2>/dev/null | grep -q 'install ok installed'; then
	fail "haproxy is not installed (the package depends on it): apt-get install -y haproxy"
fi

HAROUTE_VERSION=${HAROUTE_VERSION:-0.0.0-test}
export HAROUTE_VERSION
rm -f dist/haroute_*.deb
sh packaging/build.sh deb
deb=$(ls dist/haroute_*.deb)
echo "test-deb: built $deb"

# 1. Contents. (Listed once: grep -q on a pipe would cut dpkg-deb short.)
listing=$(dpkg-deb -c "$deb")
contents=$(echo "$listing" | awk '{print $NF}')
for path in \
	./usr/bin/haroute \
	./lib/systemd/system/haroute.service \
	./etc/haroute/config/routerconfig.yaml \
	./usr/share/doc/haroute/examples/alerts/haroute.rules.yml; do
	echo "$contents" | grep -qx "$path" || fail "$deb lacks $path"
done
echo "$listing" | grep -q '^-rwxr-xr-x root/root .* ./usr/bin/haroute$' ||
	fail "/usr/bin/haroute is not root-owned 0755"
dpkg-deb -f "$deb" Depends | grep -q '^haproxy (>= 2.6)$' || fail "Depends is not haproxy (>= 2.6)"
conffiles=$(dpkg-deb -I "$deb" conffiles)
echo "$conffiles" | grep -qx /etc/haroute/config/routerconfig.yaml ||
	fail "example config is not a conffile"
echo "test-deb: contents ok"

# 2. Install.
cleanup() {
	dpkg -P haroute >/dev/null 2>&1 || true
}
trap cleanup EXIT
dpkg -i "$deb"
getent passwd haroute >/dev/null || fail "postinst did not create user haroute"
[ "$(getent passwd haroute | cut -d: -f7)" = /usr/sbin/nologin ] || fail "haroute's shell is not nologin"
getent group haroute >/dev/null || fail "postinst did not create group haroute"
out=$(haroute version) || fail "haroute version failed"
case "$out" in
	"haroute $HAROUTE_VERSION"*) ;;
	*)
		# A prebuilt binary carries whatever version it was built with.
		[ -n "${HAROUTE_BINARY:-}" ] || fail "haroute version printed '$out', want 'haroute $HAROUTE_VERSION'"
		;;
esac
cmp -s /lib/systemd/system/haroute.service systemd/haroute.service || fail "installed unit differs from systemd/haroute.service"
haroute check /etc/haroute/config >/dev/null || fail "haroute check rejects the packaged example config"
# Reinstalling must be idempotent (user exists already).
dpkg -i "$deb"
echo "test-deb: install ok ($out)"

# 3. Remove keeps edited conffiles, purge removes them.
echo "# edited" >>/etc/haroute/config/routerconfig.yaml
dpkg -r haroute
[ ! -e /usr/bin/haroute ] || fail "dpkg -r left /usr/bin/haroute"
[ ! -e /lib/systemd/system/haroute.service ] || fail "dpkg -r left the unit"
[ -e /etc/haroute/config/routerconfig.yaml ] || fail "dpkg -r removed an edited conffile"
dpkg -P haroute
[ ! -e /etc/haroute/config/routerconfig.yaml ] || fail "dpkg -P left the conffile"
if dpkg-query -W haroute >/dev/null 2>&1 && dpkg-query -W -f='${Status}' haroute | grep -q installed; then
	fail "haroute still installed after purge"
fi
trap - EXIT
echo "test-deb: remove and purge ok"
echo "test-deb: PASS"
