#!/bin/sh
# haroute post-remove (deb: "remove" | "purge" | "upgrade …";
# rpm: 0 = uninstall, 1 = upgrade). Forgets the removed unit; purge also
# drops the state directory (generated default certificate). The haroute
# account is kept, as Debian policy recommends for system users: files it
# owned elsewhere must not end up owned by a recycled UID.
set -e

case "$1" in
	remove | purge | 0)
		if [ -d /run/systemd/system ]; then
			systemctl daemon-reload >/dev/null 2>&1 || true
		fi
		;;
esac
if [ "$1" = purge ]; then
	rm -rf /var/lib/haroute
fi
exit 0
