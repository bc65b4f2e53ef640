#!/bin/sh
# haroute pre-install (deb: "install" | "upgrade …"; rpm: 1 = install,
# 2 = upgrade). Creates the unprivileged account the unit runs as before
# the files are unpacked, so /etc/haroute/secrets gets group haroute.
set -e

if ! getent group haroute >/dev/null 2>&1; then
	groupadd --system haroute
fi
if ! getent passwd haroute >/dev/null 2>&1; then
	useradd --system --gid haroute --no-create-home \
		--home-dir /var/lib/haroute --shell /usr/sbin/nologin \
		--comment "haroute HAProxy router" haroute
fi
exit 0
