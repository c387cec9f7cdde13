#!/usr/bin/env bash
# Build kube-apiserver, kubectl and etcd from the modules pinned in go.mod (CGO_ENABLED=0, -trimpath) into
# tests/cluster/bin, which git ignores. A stamp of go.mod, go.sum and the Go version says which
# pins the binaries were built from: they are rebuilt only when those change.
set -euo pipefail
cd "$(dirname "$0")"
BIN=bin
stamp=$( (cat go.mod go.sum; go version) | sha256sum | cut -d' ' -f1)
if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kubectl" ] && [ -x "$BIN/etcd" ] && [ "$(cat "$BIN/.stamp" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
KUBE=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=${KUBE#v1.}; minor=${minor%%.*}
# kube-apiserver reports the version it was built from (clients and emulation checks read it)
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$KUBE -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
mkdir -p "$BIN"
echo "building kube-apiserver and kubectl $KUBE, and etcd $(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3) (once per pin)" >&2
export CGO_ENABLED=0
go build -trimpath -ldflags "$ldflags" -o "$BIN/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
# the tests drive the cluster as users do, with a kubectl of the same version
go build -trimpath -ldflags "$ldflags" -o "$BIN/kubectl" k8s.io/kubernetes/cmd/kubectl
go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
echo "$stamp" >"$BIN/.stamp"
