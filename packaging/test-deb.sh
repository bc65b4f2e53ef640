#!/bin/sh
# Builds the .deb and checks it on this machine, as root: contents and
# version, install (user created, binary runs, unit and production config
# in place, stats credentials generated 0640 root:haroute, no private
# keys), remove (binary gone, edited config kept), purge (nothing of the
# package left under /etc/haroute or /var/lib/haroute). CI runs it; it changes
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

HAROUTE_VERSION=${HAROUTE_VERSION:-$(./packaging/version.sh)}
export HAROUTE_VERSION
case "$HAROUTE_VERSION" in
	0.0.0 | "") fail "version '$HAROUTE_VERSION': packaging/version.sh must never give a bare 0.0.0" ;;
esac
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
	./etc/haroute/README.md \
	./etc/haroute/config/routerconfig.yaml \
	./etc/haroute/config/routes/ \
	./etc/haroute/secrets/ \
	./usr/share/doc/haroute/copyright \
	./usr/share/doc/haroute/examples/config/routes/hello.yaml \
	./usr/share/doc/haroute/examples/alerts/haroute.rules.yml; do
	echo "$contents" | grep -qx "$path" || fail "$deb lacks $path"
done
echo "$listing" | grep -q '^-rwxr-xr-x root/root .* ./usr/bin/haroute$' ||
	fail "/usr/bin/haroute is not root-owned 0755"
echo "$listing" | grep -q '^drwxr-x--- root/haroute .* ./etc/haroute/secrets/$' ||
	fail "/etc/haroute/secrets is not root:haroute 0750"
# The production skeleton: no routes and no keys under /etc/haroute.
if echo "$contents" | grep '^./etc/haroute/' | grep -v -e '/$' -e '^./etc/haroute/README.md$' -e '^./etc/haroute/config/routerconfig.yaml$'; then
	fail "unexpected files under /etc/haroute (listed above): demo routes or keys?"
fi
dpkg-deb -f "$deb" Depends | grep -q '^haproxy (>= 2.6)$' || fail "Depends is not haproxy (>= 2.6)"
[ "$(dpkg-deb -f "$deb" Version)" = "$HAROUTE_VERSION" ] || fail "package version $(dpkg-deb -f "$deb" Version), want $HAROUTE_VERSION"
[ "$(dpkg-deb -f "$deb" License)" = Apache-2.0 ] || fail "License field is '$(dpkg-deb -f "$deb" License)', want Apache-2.0"
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
creds=/etc/haroute/secrets/stats-credentials
[ "$(stat -c '%U:%G %a' "$creds")" = "root:haroute 640" ] ||
	fail "$creds is $(stat -c '%U:%G %a' "$creds"), want root:haroute 640"
grep -Eq '^admin:[0-9a-f]{36}$' "$creds" || fail "$creds does not hold admin:<random password>"
first_password=$(cat "$creds")
if grep -rl 'PRIVATE KEY' /etc/haroute; then
	fail "private keys under /etc/haroute (listed above)"
fi
haroute check /etc/haroute/config || fail "haroute check rejects the packaged production config"
# What the service would run: ports 80/443/1936 and the /stats page
# guarded by the generated password, accepted by the real haproxy -c.
bundle=$(mktemp -d)
haroute render /etc/haroute/config --out "$bundle" >/dev/null || fail "haroute render of the production config failed"
for want in '  bind :80' '  bind :443' '  bind :1936' "  stats auth '$first_password'"; do
	grep -qxF "$want" "$bundle/haproxy.cfg" || fail "rendered haproxy.cfg lacks the line '$want'"
done
haproxy -c -q -f "$bundle/haproxy.cfg" || fail "haproxy -c refuses the production config"
rm -rf "$bundle"
# Reinstalling must be idempotent (user exists already) and must keep the
# password.
dpkg -i "$deb"
[ "$(cat "$creds")" = "$first_password" ] || fail "reinstall replaced the stats password"
echo "test-deb: install ok ($out)"

# 3. Remove keeps edited conffiles, purge removes them.
echo "# edited" >>/etc/haroute/config/routerconfig.yaml
dpkg -r haroute
[ ! -e /usr/bin/haroute ] || fail "dpkg -r left /usr/bin/haroute"
[ ! -e /lib/systemd/system/haroute.service ] || fail "dpkg -r left the unit"
[ -e /etc/haroute/config/routerconfig.yaml ] || fail "dpkg -r removed an edited conffile"
dpkg -P haroute
if [ -e /etc/haroute ] || [ -e /var/lib/haroute ]; then
	find /etc/haroute /var/lib/haroute 2>/dev/null
	fail "dpkg -P left the files above"
fi
if dpkg-query -W haroute >/dev/null 2>&1 && dpkg-query -W -f='${Status}' haroute | grep -q installed; then
	fail "haroute still installed after purge"
fi
trap - EXIT
echo "test-deb: remove and purge ok"
echo "test-deb: PASS"
