//go:build tools

// Package etcd pins the etcd server that the e2e control plane runs (tools/controlplane).
package etcd

import _ "go.etcd.io/etcd/server/v3"
