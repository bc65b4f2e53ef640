#!/bin/sh
# haroute post-install (deb: "configure [old-version]"; rpm: 1 = install,
# 2 = upgrade). Creates the unprivileged account the unit runs as, and makes
# systemd see the new unit. The service is not started on install: it binds
# :80 and :443, which may belong to something else until the operator says
# otherwise (systemctl enable --now haroute).
set -e

if ! getent group haroute >/dev/null 2>&1; then
	groupadd --system haroute
fi
if ! getent passwd haroute >/dev/null 2>&1; then
	useradd --system --gid haroute --no-create-home \
		--home-dir /var/lib/haroute --shell /usr/sbin/nologin \
		--comment "haroute HAProxy router" haroute
fi

if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
	upgrade=no
	if [ "$1" = configure ] && [ -n "${2:-}" ]; then
		upgrade=yes # deb: configure <old-version>
	elif [ "$1" = 2 ]; then
		upgrade=yes # rpm: 2 = upgrade
	fi
	if [ "$upgrade" = yes ]; then
		# A running router picks up the new binary; a stopped one stays stopped.
		systemctl try-restart haroute.service >/dev/null 2>&1 || true
	fi
fi
exit 0
