#!/usr/bin/env bash
# Puts Debian 13 (trixie)'s HAProxy 3.0 beside the host's HAProxy, from
# Debian's packages only, without touching the host's dpkg database:
#
#   test/install-haproxy3.sh [DIR]     # default DIR: build/haproxy3
#   HAROUTE_HAPROXY=$PWD/build/haproxy3/haproxy go test ./...
#
# HAROUTE_HAPROXY3_SUITE names another suite (sid: the newest HAProxy
# Debian has), HAROUTE_HAPROXY3_VERSION the version it must start with
# (default 3.0.; `make test-haproxy-sid` takes any 3.x).
#
# A private apt configuration under DIR/apt (the host's Debian mirror and
# archive keyring, suite trixie, an empty dpkg status) resolves haproxy's
# dependency closure; apt verifies every .deb against trixie's signed
# Release file. The .debs are unpacked with dpkg-deb -x into DIR/root, and
# DIR/haproxy runs DIR/root's haproxy with DIR/root's own dynamic loader
# and libraries (trixie's glibc and OpenSSL are newer than bookworm's) and
# OpenSSL configuration; CA certificates are the host's.
# `--argv0` keeps the wrapper as argv[0], so HAProxy's master re-executes
# itself (on `reload`) through the wrapper too.
#
# The resolved package versions are written to DIR/VERSIONS. Running it
# again is a no-op while DIR/haproxy works; remove DIR to refresh.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-build/haproxy3}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
suite=${HAROUTE_HAPROXY3_SUITE:-trixie}

version() { "$dir/haproxy" -v 2>/dev/null | sed -n 1p; }
if [ -x "$dir/haproxy" ] && [[ "$(version)" == "HAProxy version 3."* ]]; then
  version
  exit 0
fi

# The mirror the host's apt uses for Debian (one-line or deb822 sources),
# so the same proxy or local mirror serves us.
mirror=$(
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -oE 'https?://[^ ]*/debian/?( |$)' | grep -v security | head -1 | tr -d ' ' || true
)
mirror=${mirror:-http://deb.debian.org/debian}
mirror=${mirror%/}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || { echo "install-haproxy3: $keyring missing: apt-get install debian-archive-keyring" >&2; exit 1; }

apt=$dir/apt
rm -rf "$apt" "$dir/root"
mkdir -p "$apt/etc/sources.list.d" "$apt/etc/apt.conf.d" "$apt/etc/preferences.d" \
  "$apt/lists/partial" "$apt/archives/partial" "$dir/root"
: >"$apt/status"
echo "deb [signed-by=$keyring] $mirror $suite main" >"$apt/etc/sources.list"
arch=$(dpkg --print-architecture)
opts=(
  -o "Dir::Etc=$apt/etc" -o "Dir::Etc::SourceList=$apt/etc/sources.list"
  -o "Dir::Etc::SourceParts=$apt/etc/sources.list.d" -o "Dir::Etc::Parts=$apt/etc/apt.conf.d"
  -o "Dir::Etc::PreferencesParts=$apt/etc/preferences.d"
  -o "Dir::State=$apt" -o "Dir::State::Lists=$apt/lists" -o "Dir::State::status=$apt/status"
  -o "Dir::Cache=$apt" -o "Dir::Cache::Archives=$apt/archives"
  -o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
  -o "APT::Install-Recommends=false" -o "Debug::NoLocking=true"
)
echo "install-haproxy3: haproxy from $mirror $suite into $dir" >&2
apt-get "${opts[@]}" -qq update
# openssl for trixie's /etc/ssl/openssl.cnf: a trixie host has it, and
# the host's own (bookworm's) is not what trixie's libssl reads there.
apt-get "${opts[@]}" -qq -y install --download-only haproxy openssl >/dev/null
for deb in "$apt"/archives/*.deb; do
  dpkg-deb -x "$deb" "$dir/root"
done
for deb in "$apt"/archives/*.deb; do
  dpkg-deb --show --showformat='${Package} ${Version}\n' "$deb"
done >"$dir/VERSIONS"

root=$dir/root
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || echo "$(uname -m)-linux-gnu")
loader=
for f in "$root/usr/lib/$triplet"/ld-linux*.so.* "$root"/usr/lib64/ld-linux*.so.* "$root"/usr/lib/ld-linux*.so.*; do
  [ -e "$f" ] && { loader=$f; break; }
done
[ -n "$loader" ] || { echo "install-haproxy3: no dynamic loader in $root" >&2; exit 1; }
libs=$root/usr/lib/$triplet:$root/lib/$triplet
cat >"$dir/haproxy" <<EOF
#!/bin/sh
# Debian $suite's HAProxy with its own loader and libraries
# (written by test/install-haproxy3.sh; versions in VERSIONS beside it).
OPENSSL_CONF=$root/etc/ssl/openssl.cnf
OPENSSL_MODULES=$root/usr/lib/$triplet/ossl-modules
export OPENSSL_CONF OPENSSL_MODULES
exec $loader --library-path $libs --argv0 "\$0" $root/usr/sbin/haproxy "\$@"
EOF
chmod 0755 "$dir/haproxy"
rm -rf "$apt/archives"
version
want=${HAROUTE_HAPROXY3_VERSION:-3.0.}
[[ "$(version)" == "HAProxy version $want"* ]] || {
  echo "install-haproxy3: $suite's haproxy is not $want (see $dir/VERSIONS)" >&2
  exit 1
}
