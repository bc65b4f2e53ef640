#!/bin/sh
# Binds the kubelet's projection of the `routes` ConfigMap (mounted by the
# routes-holder pod) onto /etc/haroute/config inside haroute's service, with
# a systemd drop-in (BindReadOnlyPaths=). Run as root, from
# haroute-microshift-bind.timer; it only rewrites the drop-in and restarts
# haroute when the holder pod was recreated (its UID, and so the host path,
# changed). Updates of the ConfigMap itself need nothing from here: the
# kubelet swaps ..data inside the bound directory and haroute sees it.
set -eu

NAMESPACE=${NAMESPACE:-haroute-config}
SELECTOR=${SELECTOR:-app=routes-holder}
VOLUME=${VOLUME:-routes}
KUBELET_ROOT=${KUBELET_ROOT:-/var/lib/kubelet}
DROPIN=${DROPIN:-/etc/systemd/system/haroute.service.d/microshift-config.conf}
TARGET=${TARGET:-/etc/haroute/config}
OC=${OC:-oc}
SYSTEMCTL=${SYSTEMCTL:-systemctl}
export KUBECONFIG="${KUBECONFIG:-/var/lib/microshift/resources/kubeadmin/kubeconfig}"

uid=$("$OC" get pod -n "$NAMESPACE" -l "$SELECTOR" \
	--field-selector=status.phase=Running \
	-o jsonpath='{.items[0].metadata.uid}')
if [ -z "$uid" ]; then
	echo "haroute-microshift-bind: no running pod $SELECTOR in namespace $NAMESPACE" >&2
	exit 1
fi
src="$KUBELET_ROOT/pods/$uid/volumes/kubernetes.io~configmap/$VOLUME"
if [ ! -e "$src/..data" ]; then
	echo "haroute-microshift-bind: $src is not a ConfigMap volume (no ..data)" >&2
	exit 1
fi

# "-": a source that vanished (the holder pod recreated, its volume torn
# down) does not stop haroute from starting; it then finds no ConfigMap
# volume at $TARGET and, in atomic mode, serves its saved last good state
# until this script binds the new volume. Without atomic mode the
# package's own $TARGET (or an emptied directory) would read as a valid
# generation with no routes.
want="# Written by haroute-microshift-bind.sh: the routes ConfigMap of pod $uid.
[Unit]
After=microshift.service

[Service]
BindReadOnlyPaths=-$src:$TARGET
ExecStart=
ExecStart=/usr/bin/haroute run --config-dir $TARGET --run-dir /run/haroute --watch-mode atomic"

if [ "$(cat "$DROPIN" 2>/dev/null || true)" = "$want" ]; then
	exit 0
fi
mkdir -p "$(dirname "$DROPIN")"
printf '%s\n' "$want" >"$DROPIN.tmp"
mv "$DROPIN.tmp" "$DROPIN"
echo "haroute-microshift-bind: haroute now reads $src"
"$SYSTEMCTL" daemon-reload
# A running haroute must restart to get the new bind mount; a stopped one
# picks it up when started.
"$SYSTEMCTL" try-restart haroute.service
