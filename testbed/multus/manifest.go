package multus

import (
	"fmt"
	"net/netip"
)

// PluginUser is the API user the plugin runs as (its client certificate's
// common name); Manifest grants it what the plugin calls.
const PluginUser = "system:lhmultus"

// Manifest is what a cluster with the meta-plugin needs on its API server:
// the NetworkAttachmentDefinition CRD (k8s.cni.cncf.io/v1, namespaced,
// spec.config a string, as Multus installs it) and the plugin's RBAC.
const Manifest = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: network-attachment-definitions.k8s.cni.cncf.io
spec:
  group: k8s.cni.cncf.io
  scope: Namespaced
  names:
    plural: network-attachment-definitions
    singular: network-attachment-definition
    kind: NetworkAttachmentDefinition
    shortNames: [net-attach-def]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        description: 'NetworkAttachmentDefinition is the Network Plumbing Working Group''s CRD for attaching pods to more networks'
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            description: NetworkAttachmentDefinition spec defines the desired state of a network attachment
            type: object
            properties:
              config:
                description: NetworkAttachmentDefinition config is a JSON-formatted CNI configuration
                type: string
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: lhmultus
rules:
- apiGroups: [k8s.cni.cncf.io]
  resources: [network-attachment-definitions]
  verbs: [get]
- apiGroups: [""]
  resources: [pods]
  verbs: [get]
- apiGroups: [""]
  resources: [pods/status]
  verbs: [update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: lhmultus
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: lhmultus}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ` + PluginUser + `}
`

// PluginConflist renders the conflist containerd loads first
// (00-lhmultus.conflist): the meta-plugin with its kubeconfig and the
// cluster network's conflist, declaring portMappings so that containerd
// hands host ports on to the cluster network's portmap plugin.
func PluginConflist(kubeconfig, clusterNetwork string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "lhmultus",
  "plugins": [
    {
      "type": "lhmultus",
      "kubeconfig": %q,
      "clusterNetwork": %q,
      "capabilities": {"portMappings": true}
    }
  ]
}
`, kubeconfig, clusterNetwork)
}

// StorageNAD renders a NetworkAttachmentDefinition for a storage network:
// macvlan (bridge mode) on each node's master interface, host-local
// addresses from rangeStart..rangeEnd of subnet with no routes (nothing
// but the subnet goes over it). dataDir is host-local's allocation
// directory; one shared by every node makes the allocation cluster-wide
// (the test bed's nodes share the host's file system), the job whereabouts
// does on real clusters.
func StorageNAD(namespace, name, master string, subnet netip.Prefix, rangeStart, rangeEnd netip.Addr, dataDir string) string {
	return fmt.Sprintf(`apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: %s
  namespace: %s
spec:
  config: '{"cniVersion": "0.3.1", "type": "macvlan", "master": %q, "mode": "bridge", "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "rangeStart": %q, "rangeEnd": %q}]], "dataDir": %q}}'
`, name, namespace, master, subnet, rangeStart, rangeEnd, dataDir)
}
