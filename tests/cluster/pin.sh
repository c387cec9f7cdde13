#!/usr/bin/env bash
# Pin the test cluster: write go.mod/go.sum requiring the control plane (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl) and etcd at the given versions, and
# kwok/go.mod/go.sum requiring KWOK at its version, helm/go.mod/go.sum requiring helm at its version. k8s.io/kubernetes points its staging modules (k8s.io/api, k8s.io/client-go, ...)
# at ./staging/src, which a dependent module cannot use; the replace directives here are
# generated from that version's own go.mod, each staging module pinned to its tagged v0.X.Y.
#   bash tests/cluster/pin.sh [KUBERNETES_VERSION] [ETCD_VERSION] [KWOK_VERSION] [HELM_VERSION]
set -euo pipefail
cd "$(dirname "$0")"
KUBE=${1:-v1.34.4}
ETCD=${2:-v3.6.16}
KWOK=${3:-v0.8.0}
HELM=${4:-v4.3.2}
STAGING=v0.${KUBE#v1.} # k8s.io/kubernetes v1.34.4 ships its staging modules as v0.34.4

rm -f go.mod go.sum
go mod init policyd.test/cluster >/dev/null 2>&1
go mod edit -go=1.26 -require="k8s.io/kubernetes@$KUBE" -require="go.etcd.io/etcd/server/v3@$ETCD" \
  -tool=k8s.io/kubernetes/cmd/kube-apiserver \
  -tool=k8s.io/kubernetes/cmd/kube-controller-manager -tool=k8s.io/kubernetes/cmd/kube-scheduler \
  -tool=k8s.io/kubernetes/cmd/kubectl -tool=go.etcd.io/etcd/server/v3
KUBE_MOD=$(go mod download -json "k8s.io/kubernetes@$KUBE" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
# lines like: k8s.io/api => ./staging/src/k8s.io/api
grep -E '^\s*k8s\.io/[^ ]+ => \./staging/' "$KUBE_MOD" | awk '{print $1}' | while read -r module; do
  go mod edit -replace="$module=$module@$STAGING"
done
go mod tidy
# KWOK in a module of its own: it needs newer k8s.io staging modules than the control plane's pin
(
  cd kwok
  rm -f go.mod go.sum
  go mod init policyd.test/cluster/kwok >/dev/null 2>&1
  go mod edit -go=1.26 -require="sigs.k8s.io/kwok@$KWOK" -tool=sigs.k8s.io/kwok/cmd/kwok
  go mod tidy
)
# helm likewise in a module of its own (it brings its own k8s.io staging modules)
(
  mkdir -p helm
  cd helm
  rm -f go.mod go.sum
  go mod init policyd.test/cluster/helm >/dev/null 2>&1
  go mod edit -go=1.26 -require="helm.sh/helm/v4@$HELM" -tool=helm.sh/helm/v4/cmd/helm
  go mod tidy
)
echo "pinned k8s.io/kubernetes $KUBE (staging $STAGING), go.etcd.io/etcd/server/v3 $ETCD, sigs.k8s.io/kwok $KWOK, helm.sh/helm/v4 $HELM"
