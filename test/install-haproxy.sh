#!/usr/bin/env bash
# Installs Debian's HAProxy when it is missing. As root it runs apt-get;
# otherwise it prints the exact command and fails, rather than half-working.
set -euo pipefail
if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  echo "haproxy not found: installing it with apt-get" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null
  # Debian starts the packaged service; haroute runs its own HAProxy.
  (systemctl disable --now haproxy || service haproxy stop || true) >/dev/null 2>&1
  exit 0
fi
echo "haproxy is not installed. Install it with:" >&2
echo "  sudo apt-get update && sudo apt-get install -y haproxy" >&2
exit 1
