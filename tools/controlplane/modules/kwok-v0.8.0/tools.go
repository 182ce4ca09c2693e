//go:build tools

// Package kwok pins the KWOK that simulates the e2e control plane's nodes (tools/controlplane).
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
