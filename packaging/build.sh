#!/bin/sh
# Builds haroute and packages it as .deb and .rpm into dist/.
#
#   packaging/build.sh                 # both formats, for the host's GOARCH
#   packaging/build.sh deb             # only the .deb
#   GOARCH=arm64 packaging/build.sh    # cross-build
#
# HAROUTE_VERSION sets the package version (default: packaging/version.sh,
# the same version `make build` gives `haroute version`: the v* tag, else
# 0.0.0~git<date>.<sha>). HAROUTE_BINARY packages an already-built binary
# instead of building cmd/haroute.
set -eu

cd "$(dirname "$0")/.."

GOARCH=${GOARCH:-$(go env GOARCH)}
export GOARCH

HAROUTE_VERSION=${HAROUTE_VERSION:-$(./packaging/version.sh)}
export HAROUTE_VERSION

mkdir -p dist
if [ -n "${HAROUTE_BINARY:-}" ]; then
	cp "$HAROUTE_BINARY" dist/haroute
else
	CGO_ENABLED=0 GOOS=linux go build -trimpath \
		-ldflags "-s -w -X github.com/haroute/haroute/internal/cli.Version=$HAROUTE_VERSION" \
		-o dist/haroute ./cmd/haroute
fi
chmod 0755 dist/haroute

formats=${*:-deb rpm}
for format in $formats; do
	go tool nfpm package -f packaging/nfpm.yaml -p "$format" -t dist/
done
