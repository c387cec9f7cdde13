#!/usr/bin/env bash
# Set up policyd, start the daemon with the bundled rules and the example catalog,
# and query it. Pass --serve to keep the daemon running afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(command -v python3.11 || command -v python3)
if [ ! -x .venv/bin/policyd ]; then
  "$PY" -m venv .venv
  .venv/bin/pip install --quiet --upgrade pip
  .venv/bin/pip install --quiet -e .
fi
PORT=${POLICYD_PORT:-50051}
export POLICYD_ADDRESS=127.0.0.1:$PORT
READY=$(mktemp -u)
.venv/bin/policyd --catalog examples/catalog --listen "$POLICYD_ADDRESS" --ready-file "$READY" --log-format text &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null || true; rm -f "$READY"' EXIT
for _ in $(seq 100); do
  [ -s "$READY" ] && break
  if ! kill -0 "$DAEMON" 2>/dev/null; then  # policyd stopped, and has said why (a busy port, …)
    wait "$DAEMON" || exit $?
    exit 1
  fi
  sleep 0.1
done

run() { echo; echo "\$ policyctl $*"; .venv/bin/policyctl "$@" || true; }
# a command the demo runs for its refusal: says so before the error
refused() {
  echo; echo "# expected to fail: $1"; shift
  echo "\$ policyctl $*"; .venv/bin/policyctl "$@" || true
}
run explain -f examples/inferenceservices/llama-3-2-3b.yaml
run select -f examples/inferenceservices/llama-3-2-3b.yaml
refused "OMENative asked for, and no runtime of the example catalog serves this model so (the error gives each one's reason)" \
  select -f examples/inferenceservices/llama-3-70b-omenative.yaml
run explain -f examples/inferenceservices/qwen-image-pvc.yaml
run explain --model qwen-image -n qwen-demo
run resolve -f examples/inferenceservices/llama-3-2-1b-named.yaml
run diff --rules rules/examples --isvc examples/inferenceservices/qwen-image-pvc.yaml
run lint

if [ "${1:-}" = "--serve" ]; then
  echo; echo "policyd serving on $POLICYD_ADDRESS (Ctrl-C to stop)"
  wait $DAEMON
fi
