// Package v1beta2 holds the longhorn.io/v1beta2 API: the custom resources the
// manager reads and writes (Volume, Engine, Replica, Node, Setting, ...).
//
// Field names, JSON keys, enum values, short names and printer columns follow
// Longhorn's v1beta2 API (longhorn-manager k8s/pkg/apis/longhorn/v1beta2), so a
// manifest written for Longhorn applies unchanged. Types are hand-written; the
// deep-copy functions, clientset, listers and informers are generated
// (make generate) and the CRD YAML under k8s/crds/ is generated from the
// kubebuilder markers in this package.
//
// This package imports nothing of the project: it is the bottom of the
// dependency graph.
//
// +k8s:deepcopy-gen=package
// +groupName=longhorn.io
package v1beta2
