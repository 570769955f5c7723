// Package deploy holds the installation manifest, longhorn.yaml, and its
// tests. The manifest is generated (make manifests) by rendering the Helm
// chart in chart/ with its default values; never edit it by hand.
//
// Install on any cluster:
//
//	kubectl apply -f deploy/longhorn.yaml
//
// It creates namespace longhorn-system, the CRDs, the manager's
// ServiceAccount and RBAC, the settings ConfigMaps, the longhorn-manager
// DaemonSet (image longhornio/longhorn:<version>, built from
// package/Dockerfile), the REST API Service longhorn-backend:9500, the webhook
// Services and the webhook configurations whose rules and CA the manager
// fills in at start.
package deploy

import _ "embed"

// Manifest is deploy/longhorn.yaml as built into the binary's tests and tools.
//
//go:embed longhorn.yaml
var Manifest []byte
