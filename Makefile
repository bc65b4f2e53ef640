# haroute — the two commands a new user needs are `make run` and `make test`.
GO        ?= go
BIN       := bin/haroute
DEMO      := bin/demobackend
PKG       := github.com/haroute/haroute
# The same version the packages carry (packaging/version.sh).
VERSION   ?= $(shell ./packaging/version.sh)
LDFLAGS   := -s -w -X $(PKG)/internal/cli.Version=$(VERSION)

.PHONY: build test test-haproxy3 test-haproxy-sid test-unit test-e2e lint fmt bench run update-golden package clean install-haproxy install-haproxy3 install-haproxy-sid

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/haroute
	$(GO) build -trimpath -o $(DEMO) ./test/demobackend

# Every test, unit and end-to-end, against the real HAProxy.
test: install-haproxy
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

# The same suite against Debian 13's HAProxy 3.0 (from trixie's packages,
# unpacked under build/haproxy3 by test/install-haproxy3.sh). Every test
# takes its haproxy from HAROUTE_HAPROXY (internal/testutil.HAProxy).
HAPROXY3 := $(CURDIR)/build/haproxy3/haproxy
test-haproxy3: install-haproxy3
	HAROUTE_HAPROXY=$(HAPROXY3) $(GO) test -count=1 -timeout 30m ./...

# The packages' tests (HAProxy's own included: the supervisor, the
# runtime API, render's live tests) against the newest HAProxy Debian has,
# sid's (3.2.26 when this was written), unpacked under build/haproxy-sid:
# from 3.1 the worker, not the master, loads the configuration.
HAPROXY_SID := $(CURDIR)/build/haproxy-sid/haproxy
test-haproxy-sid: install-haproxy-sid
	HAROUTE_HAPROXY=$(HAPROXY_SID) $(GO) test -count=1 -timeout 30m ./internal/...

# The packages' own tests (some of them against a real HAProxy too),
# without the end-to-end suite. No test reads -short, so it is not passed.
test-unit:
	$(GO) test -count=1 ./internal/...

test-e2e: install-haproxy
	$(GO) test -count=1 -timeout 30m -v ./test/e2e/...

# staticcheck is pinned in go.mod as a Go tool (go get -tool).
lint:
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

# Go benchmarks plus the load harness; figures land in BENCHMARKS.md.
bench: install-haproxy build
	./test/bench/run.sh

# Starts demo backends and the router on examples/config (ports 9080/9443/9936).
run: install-haproxy build
	./test/run-demo.sh

update-golden:
	$(GO) test ./internal/render/ -run Golden -update

package:
	./packaging/build.sh

clean:
	rm -rf bin dist build

# HAProxy is part of `make run` and `make test`: install it when missing
# (as root), or say exactly what to run.
install-haproxy:
	@./test/install-haproxy.sh

install-haproxy3:
	@./test/install-haproxy3.sh build/haproxy3

install-haproxy-sid:
	@HAROUTE_HAPROXY3_SUITE=sid HAROUTE_HAPROXY3_VERSION=3. ./test/install-haproxy3.sh build/haproxy-sid
