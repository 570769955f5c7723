//go:build tools

// Package tools pins the code generators used by `make generate` (see
// hack/gen-api.sh). It is a separate module so the generators' dependencies
// never enter the product's go.mod.
package tools

import (
	_ "k8s.io/code-generator/cmd/client-gen"
	_ "k8s.io/code-generator/cmd/deepcopy-gen"
	_ "k8s.io/code-generator/cmd/informer-gen"
	_ "k8s.io/code-generator/cmd/lister-gen"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
