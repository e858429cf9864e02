module github.com/agentenv/agentenv/integration/kube/kwok

go 1.26.0

require sigs.k8s.io/kwok v0.8.0

tool sigs.k8s.io/kwok/cmd/kwok
