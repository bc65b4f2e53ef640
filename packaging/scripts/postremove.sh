#!/bin/sh
# haroute post-remove (deb: "remove" | "purge" | "upgrade …";
# rpm: 0 = erase, 1 = upgrade). Forgets the removed unit. Purging the .deb,
# or erasing the .rpm (which has no separate purge), also removes what the
# scripts and the service created: the stats credentials, the state
# directory (rendered configuration, generated default certificate, last
# good state). The haroute account is kept, as Debian policy recommends for
# system users: files it owned elsewhere must not end up owned by a
# recycled UID.
set -e

case "$1" in
	remove | purge | 0)
		if [ -d /run/systemd/system ]; then
			systemctl daemon-reload >/dev/null 2>&1 || true
		fi
		;;
esac

case "$1" in
	purge | 0)
		rm -f /etc/haroute/secrets/stats-credentials /etc/haroute/secrets/stats-credentials.tmp
		rm -rf /var/lib/haroute
		# dpkg --purge deletes conffiles an operator edited; rpm -e keeps
		# them as .rpmsave: drop those too. Then remove the directories
		# left empty (neither dpkg nor rpm could, while the credentials
		# were there); one still holding the operator's own files stays.
		if [ "$1" = 0 ]; then
			find /etc/haroute -name '*.rpmsave' -type f -delete 2>/dev/null || true
		fi
		for d in /etc/haroute/config/routes /etc/haroute/config/endpoints \
			/etc/haroute/config /etc/haroute/secrets /etc/haroute; do
			rmdir "$d" 2>/dev/null || true
		done
		;;
esac
exit 0
