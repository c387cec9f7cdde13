#!/usr/bin/env bash
# Build the test cluster from the modules pinned in go.mod (CGO_ENABLED=0, -trimpath) into
# tests/cluster/bin, which git ignores: kube-apiserver, kube-controller-manager, kube-scheduler and
# kubectl (one k8s.io/kubernetes pin), etcd, and KWOK from kwok/go.mod (its own module: KWOK v0.8.0
# needs k8s.io/client-go v0.36, the control plane's pin is older). KWOK's stages (what it does to
# the nodes and pods it manages) are its own files from that module, copied to bin/kwok-stages.yaml.
# helm from helm/go.mod (its own module too), for the chart's tests, as operators install.
# A stamp of the go.mod/go.sum files and the Go version says which pins the binaries were built
# from: they are rebuilt only when those change.
set -euo pipefail
cd "$(dirname "$0")"
BIN=bin
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok helm)
stamp=$( (cat go.mod go.sum kwok/go.mod kwok/go.sum helm/go.mod helm/go.sum build.sh; go version) | sha256sum | cut -d' ' -f1)
built() {
  for b in "${BINARIES[@]}"; do [ -x "$BIN/$b" ] || return 1; done
  [ -f "$BIN/kwok-stages.yaml" ] && [ "$(cat "$BIN/.stamp" 2>/dev/null)" = "$stamp" ]
}
built && exit 0
KUBE=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=${KUBE#v1.}; minor=${minor%%.*}
# kube-apiserver reports the version it was built from (clients and emulation checks read it)
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$KUBE -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
mkdir -p "$BIN"
KWOK=$(cd kwok && go list -m -f '{{.Version}}' sigs.k8s.io/kwok)
HELM=$(cd helm && go list -m -f '{{.Version}}' helm.sh/helm/v4)
echo "building the control plane and kubectl $KUBE, etcd $(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3), KWOK $KWOK and helm $HELM (once per pin)" >&2
export CGO_ENABLED=0
for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
  go build -trimpath -ldflags "$ldflags" -o "$BIN/$cmd" "k8s.io/kubernetes/cmd/$cmd"
done
# the tests drive the cluster as users do, with a kubectl of the same version
go build -trimpath -ldflags "$ldflags" -o "$BIN/kubectl" k8s.io/kubernetes/cmd/kubectl
go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
(cd kwok && go build -trimpath -ldflags "-s -w" -o "../$BIN/kwok" sigs.k8s.io/kwok/cmd/kwok)
# `helm version` reports the pinned tag, as a release build does
hver=helm.sh/helm/v4/internal/version
(cd helm && go build -trimpath -ldflags "-s -w -X $hver.version=$HELM -X $hver.metadata= -X $hver.gitTreeState=clean" \
  -o "../$BIN/helm" helm.sh/helm/v4/cmd/helm)
# KWOK's own stages: nodes initialized and kept alive by heartbeats (the node lifecycle controller
# would otherwise taint them unreachable), pods made Running and Ready, completed, deleted
STAGES=$(cd kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
for stage in node/fast/node-initialize node/heartbeat/node-heartbeat pod/fast/pod-ready \
  pod/fast/pod-complete pod/fast/pod-delete; do
  echo "---"
  cat "$STAGES/$stage.yaml"
done >"$BIN/kwok-stages.yaml"
echo "$stamp" >"$BIN/.stamp"
