#!/bin/sh
# haroute post-install (deb: "configure [old-version]"; rpm: 1 = install,
# 2 = upgrade). Writes the /stats page's credentials once, and makes
# systemd see the new unit. The service is not started on install: it binds
# :80 and :443, which may belong to something else until the operator says
# otherwise (systemctl enable --now haroute).
set -e

# The account comes from the pre-install script; a package manager that
# skipped it (dpkg --unpack, then configure later) still gets one.
if ! getent group haroute >/dev/null 2>&1; then
	groupadd --system haroute
fi
if ! getent passwd haroute >/dev/null 2>&1; then
	useradd --system --gid haroute --no-create-home \
		--home-dir /var/lib/haroute --shell /usr/sbin/nologin \
		--comment "haroute HAProxy router" haroute
fi

# The RouterConfig names this file; each host gets its own password, and
# an operator's file is never replaced. Created 0640 root:haroute from the
# start (umask), so the password is never readable by others.
creds=/etc/haroute/secrets/stats-credentials
if [ ! -e "$creds" ]; then
	password=$(od -An -N18 -tx1 /dev/urandom | tr -d ' \n')
	(
		umask 0027
		printf 'admin:%s\n' "$password" >"$creds.tmp"
	)
	chgrp haroute "$creds.tmp"
	chmod 0640 "$creds.tmp"
	mv -f "$creds.tmp" "$creds"
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
