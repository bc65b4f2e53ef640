#!/usr/bin/env bash
# `make run`: start named demo backends and haroute on examples/config, on
# unprivileged ports (http 9080, https 9443, HAProxy stats 9936, haroute
# metrics/status 9191), prove that each kind of route serves, then keep
# running until Ctrl-C, which stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."

certs=examples/demo-certs
work=$(mktemp -d /tmp/haroute-demo.XXXXXX)
pids=()
cleanup() {
  trap - EXIT INT TERM
  echo
  echo "stopping haroute and the demo backends…"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# Every port the demo uses must be free: haroute keeps routing when its
# metrics address is taken (it retries it), and the readiness check and
# `status` below would then ask whatever holds 9191.
for port in 9080 9443 9936 9191 18081 18082 18083 18084 18085 18086 18091 18443 18444; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "port $port on 127.0.0.1 is in use; make run needs 9080, 9443, 9936, 9191, 18081-18086, 18091, 18443 and 18444 free" >&2
    exit 1
  fi
done

# Each backend answers with its own name; see examples/config/endpoints.
bin/demobackend \
  hello=127.0.0.1:18081 hello-2=127.0.0.1:18091 api=127.0.0.1:18082 \
  secure=127.0.0.1:18083 apps=127.0.0.1:18084 blue=127.0.0.1:18085 green=127.0.0.1:18086 \
  "tls:reencrypt=127.0.0.1:18443:$certs/reencrypt-backend.crt:$certs/reencrypt-backend.key" \
  "tls:passthrough=127.0.0.1:18444:$certs/passthrough-backend.crt:$certs/passthrough-backend.key" \
  >"$work/backends.log" 2>&1 &
pids+=($!)

# --handover-grace 0: Ctrl-C stops HAProxy with haroute (a service
# instead leaves it serving for a restart).
bin/haroute run --config-dir examples/config --run-dir "$work/run" --state-dir "$work/state" \
  --metrics-address 127.0.0.1:9191 --handover-grace 0 &
pids+=($!)

# Ready means this haroute answers: another router on the same ports
# would answer /readyz too, so both processes must still run after it.
alive() {
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "the demo backends exited (a port of 18081-18086, 18091, 18443, 18444 in use?):" >&2
    cat "$work/backends.log" >&2
    exit 1
  fi
  if ! kill -0 "${pids[1]}" 2>/dev/null; then
    echo "haroute exited (ports 9080, 9443, 9936 or 9191 in use?); see its log above" >&2
    exit 1
  fi
}
for _ in $(seq 100); do
  alive
  curl -fs http://127.0.0.1:9191/readyz >/dev/null 2>&1 && break
  sleep 0.2
done
sleep 0.5
alive

# quote prints its arguments as one line a shell reads back the same:
# anything beyond plain URL and flag characters goes in single quotes.
quote() {
  local out=() a
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
      out+=("$a")
    else
      out+=("'${a//\'/\'\\\'\'}'")
    fi
  done
  printf '%s' "${out[*]}"
}

demo() { # description, then the curl arguments
  local what=$1; shift
  printf '  %-44s curl %s\n' "$what" "$(quote "$@")"
  printf '  %-44s → %s\n' "" "$(curl -s --max-time 5 "$@" | tr '\n' ' ')"
}
echo
echo "haroute serves examples/config. Try these (each backend answers with its name):"
demo "http:"                          -H 'Host: hello.example.test' http://127.0.0.1:9080/
demo "http, path-based:"              -H 'Host: hello.example.test' http://127.0.0.1:9080/api
demo "http, A/B 80/20 (blue/green):"  -H 'Host: ab.example.test' http://127.0.0.1:9080/
demo "edge (TLS ends at HAProxy):"    -k --resolve secure.example.test:9443:127.0.0.1 https://secure.example.test:9443/
demo "edge, plain http redirects:"    -s -o /dev/null -w '%{http_code} %{redirect_url}' -H 'Host: secure.example.test' http://127.0.0.1:9080/
demo "reencrypt (TLS to the backend):" -k --resolve reencrypt.example.test:9443:127.0.0.1 https://reencrypt.example.test:9443/
demo "passthrough (backend's own TLS):" -k --resolve passthrough.example.test:9443:127.0.0.1 https://passthrough.example.test:9443/
demo "wildcard *.apps.example.test:"  -k --resolve anything.apps.example.test:9443:127.0.0.1 https://anything.apps.example.test:9443/
echo
echo "status:  bin/haroute status --address 127.0.0.1:9191"
echo "metrics: curl -s http://127.0.0.1:9191/metrics | grep ^haroute_   (HAProxy's own: http://127.0.0.1:9936/metrics)"
echo "Edit files under examples/config to see changes applied live. Ctrl-C stops everything."
wait "${pids[1]}"
