#!/usr/bin/env bash
# Start a simulated GPU cluster: etcd, kube-apiserver, kube-controller-manager and kube-scheduler on
# 127.0.0.1, on free ports, with their own CA, certificates, kubeconfigs and service-account key
# under DIR, and KWOK, which makes the Nodes annotated kwok.x-k8s.io/node=fake Ready and the pods
# the scheduler binds to them Running (add such nodes with kubectl apply: examples/cluster/);
# load OME's CRDs and LeaderWorkerSet's; wait until they are served; write an admin kubeconfig to
# DIR/kubeconfig.
#   bash tests/cluster/up.sh DIR      (stop it with: bash tests/cluster/down.sh DIR)
# Builds the binaries first when missing (see build.sh). Run again on the same DIR, it starts only
# what is not running, on the same ports and data: that is how tests restart the API server.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: up.sh DIR" >&2; exit 2; }
mkdir -p "$1"
DIR=$(cd "$1" && pwd)
SHARED=${POLICYD_SHARED:-$HERE/../../../shared}
BIN=$HERE/bin
bash "$HERE/build.sh"

running() { # running NAME: its pid file names a live process of ours
  local pid
  pid=$(cat "$DIR/$1.pid" 2>/dev/null) || return 1
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "^$BIN/$1 "
}

wait_for() { # wait_for WHAT SECONDS COMMAND...: until COMMAND succeeds
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "up.sh: $what did not come up; see $DIR/*.log" >&2
      exit 1
    fi
    sleep 0.2
  done
}

# --- ports: chosen once per DIR, so a restarted API server keeps its address
if [ ! -f "$DIR/cluster.env" ]; then
  python3 - "$DIR/cluster.env" <<'PY'
import socket, sys
names = ["ETCD_PORT", "ETCD_PEER_PORT", "APISERVER_PORT", "CONTROLLER_MANAGER_PORT", "SCHEDULER_PORT", "KWOK_PORT"]
socks = [socket.socket() for _ in names]
for s in socks:
    s.bind(("127.0.0.1", 0))
with open(sys.argv[1], "w") as f:
    f.writelines(f"{name}={s.getsockname()[1]}\n" for name, s in zip(names, socks))
PY
fi
# shellcheck source=/dev/null
. "$DIR/cluster.env"
SERVER=https://127.0.0.1:$APISERVER_PORT
ETCD_URL=http://127.0.0.1:$ETCD_PORT

# --- certificates and the service-account key
PKI=$DIR/pki
if [ ! -f "$PKI/admin.crt" ]; then
  mkdir -p "$PKI"
  (
    cd "$PKI"
    ssl() { openssl "$@" 2>/dev/null; }
    ssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj /CN=policyd-test-ca
    sign() { # sign NAME SUBJECT EXTENSIONS
      ssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
      printf '%b' "$3" >"$1.ext"
      ssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -out "$1.crt" -extfile "$1.ext"
    }
    sign apiserver /CN=kube-apiserver \
      "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth"
    sign admin "/O=system:masters/CN=admin" "extendedKeyUsage=clientAuth"
    # each component as its RBAC bootstrap policy knows it; KWOK writes any node's and pod's status
    sign kube-controller-manager /CN=system:kube-controller-manager "extendedKeyUsage=clientAuth"
    sign kube-scheduler /CN=system:kube-scheduler "extendedKeyUsage=clientAuth"
    sign kwok "/O=system:masters/CN=kwok" "extendedKeyUsage=clientAuth"
    ssl genrsa -out sa.key 2048
    ssl rsa -in sa.key -pubout -out sa.pub
  )
fi

# --- etcd
if ! running etcd; then
  setsid "$BIN/etcd" --name test --data-dir "$DIR/etcd" \
    --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "test=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --max-request-bytes 10485760 --log-level warn \
    >>"$DIR/etcd.log" 2>&1 </dev/null &
  echo $! >"$DIR/etcd.pid"
fi
wait_for etcd 30 sh -c "curl -sf $ETCD_URL/health | grep -q '\"health\":\"true\"'"

# --- kube-apiserver
# --watch-cache=false: watches are served by etcd, so compacting etcd expires them (410 Gone) as a
# busy production cluster does; --endpoint-reconciler-type=none: a loopback address may not be
# the kubernetes Service's endpoint, and nothing here needs it; OwnerReferencesPermissionEnforcement
# (on in OpenShift, for one) checks who may set owner references, so RBAC tests see it.
if ! running kube-apiserver; then
  setsid "$BIN/kube-apiserver" --etcd-servers "$ETCD_URL" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --cert-dir "$DIR/apiserver" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" --authorization-mode RBAC \
    --enable-admission-plugins OwnerReferencesPermissionEnforcement \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 --endpoint-reconciler-type none \
    --watch-cache=false --etcd-compaction-interval 0 --profiling=false --v 1 \
    >>"$DIR/kube-apiserver.log" 2>&1 </dev/null &
  echo $! >"$DIR/kube-apiserver.pid"
fi
api() { curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$@"; }
wait_for kube-apiserver 60 api "$SERVER/readyz"

# --- kubeconfigs: the admin's, and each component's
b64() { base64 -w0 <"$1"; }
kubeconfig() { # kubeconfig USER: DIR/USER.kubeconfig with USER's certificate
  cat >"$DIR/$1.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $SERVER
    certificate-authority-data: $(b64 "$PKI/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(b64 "$PKI/$1.crt")
    client-key-data: $(b64 "$PKI/$1.key")
contexts:
- name: test
  context: {cluster: test, user: $1}
current-context: test
KUBECONFIG
}
for user in admin kube-controller-manager kube-scheduler kwok; do kubeconfig "$user"; done
mv "$DIR/admin.kubeconfig" "$DIR/kubeconfig"

# --- kube-controller-manager, kube-scheduler and KWOK: one of each, so no leader election;
# secure ports serve /healthz to anyone (their default always-allowed paths)
healthy() { curl -skf "https://127.0.0.1:$1/healthz"; }
if ! running kube-controller-manager; then
  # each controller with its own service account's token, as kubeadm runs it (the controllers'
  # roles are bound to those accounts); signing the service-account tokens it creates
  setsid "$BIN/kube-controller-manager" --kubeconfig "$DIR/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "$DIR/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "$DIR/kube-controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$CONTROLLER_MANAGER_PORT" --cert-dir "$DIR/kube-controller-manager" \
    --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --profiling=false --v 1 \
    >>"$DIR/kube-controller-manager.log" 2>&1 </dev/null &
  echo $! >"$DIR/kube-controller-manager.pid"
fi
if ! running kube-scheduler; then
  setsid "$BIN/kube-scheduler" --kubeconfig "$DIR/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$DIR/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig "$DIR/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --cert-dir "$DIR/kube-scheduler" \
    --leader-elect=false --profiling=false --v 1 \
    >>"$DIR/kube-scheduler.log" 2>&1 </dev/null &
  echo $! >"$DIR/kube-scheduler.pid"
fi
if ! running kwok; then
  # pod IPs from a /16: a benchmark runs thousands of pods
  setsid "$BIN/kwok" --kubeconfig "$DIR/kwok.kubeconfig" --config "$BIN/kwok-stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --cidr 10.0.0.1/16 --node-ip 10.255.0.1 --server-address "127.0.0.1:$KWOK_PORT" \
    >>"$DIR/kwok.log" 2>&1 </dev/null &
  echo $! >"$DIR/kwok.pid"
fi
wait_for kube-controller-manager 60 healthy "$CONTROLLER_MANAGER_PORT"
wait_for kube-scheduler 60 healthy "$SCHEDULER_PORT"
wait_for kwok 60 curl -sf "http://127.0.0.1:$KWOK_PORT/healthz"

# --- CRDs: applied server-side (too large for client-side apply's annotation); a restart on the
# same DIR skips those already applied from the same file (a no-op apply of a large CRD takes seconds)
crds=()
mkdir -p "$DIR/crds"
for file in "$SHARED"/data/ome-crds/*.yaml "$SHARED"/data/lws/*.yaml; do
  name=$(awk '/^metadata:/ {m=1; next} m && /^  name:/ {print $2; exit}' "$file")
  crds+=("$name")
  url=$SERVER/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$name
  digest=$(sha256sum <"$file" | cut -d' ' -f1)
  if [ "$(cat "$DIR/crds/$name" 2>/dev/null)" = "$digest" ] && api -o /dev/null "$url"; then
    continue
  fi
  api -o /dev/null -X PATCH -H 'Content-Type: application/apply-patch+yaml' --data-binary "@$file" \
    "$url?fieldManager=policyd-test-cluster&force=true" || { echo "up.sh: could not apply $file" >&2; exit 1; }
  echo "$digest" >"$DIR/crds/$name"
done
established() {
  api "$SERVER/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$1" | python3 -c '
import json, sys
conditions = json.load(sys.stdin).get("status", {}).get("conditions", [])
sys.exit(0 if {"type": "Established", "status": "True"}.items() <= next(
    (c for c in conditions if c["type"] == "Established"), {}).items() else 1)'
}
for name in "${crds[@]}"; do
  wait_for "CRD $name" 60 established "$name"
done
echo "cluster up: $SERVER (kubeconfig: $DIR/kubeconfig)"
