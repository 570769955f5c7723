//go:build tools

// Package crictl pins sigs.k8s.io/cri-tools for the test bed: build.sh builds
// its cmd/crictl (the CRI client users run on nodes: `crictl ps`) into the
// cache next to kubelet.
package crictl

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
