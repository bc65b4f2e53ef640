#!/bin/sh
# haroute pre-remove (deb: "remove" | "upgrade …" | "deconfigure …";
# rpm: 0 = uninstall, 1 = upgrade). Stops and disables the service when the
# package goes away, not when it is upgraded.
set -e

case "$1" in
	remove | 0)
		if [ -d /run/systemd/system ]; then
			systemctl disable --now haroute.service >/dev/null 2>&1 || true
		fi
		;;
esac
exit 0
