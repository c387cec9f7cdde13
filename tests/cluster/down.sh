#!/usr/bin/env bash
# Stop the cluster that up.sh started in DIR (KWOK and the controllers, kube-apiserver, then etcd).
# Leaves DIR's files.
#   bash tests/cluster/down.sh DIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: down.sh DIR" >&2; exit 2; }
DIR=$(cd "$1" && pwd)
for name in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
  pid=$(cat "$DIR/$name.pid" 2>/dev/null) || continue
  # only a process of ours: a stale pid file may name someone else's by now
  if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "^$HERE/bin/$name "; then
    kill -TERM "$pid"
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  fi
  rm -f "$DIR/$name.pid"
done
