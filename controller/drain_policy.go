package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Values of the node-drain-policy setting.
const (
	drainBlockIfContainsLastReplica            = "block-if-contains-last-replica"
	drainAllowIfReplicaIsStopped               = "allow-if-replica-is-stopped"
	drainAlwaysAllow                           = "always-allow"
	drainBlockForEviction                      = "block-for-eviction"
	drainBlockForEvictionIfContainsLastReplica = "block-for-eviction-if-contains-last-replica"
)

// imNeedsPDB decides whether the instance-manager pod of node gets a
// PodDisruptionBudget (minAvailable 1), which makes `kubectl drain` stop at
// it, as Longhorn does per node-drain-policy: always-allow never;
// block-if-contains-last-replica and block-for-eviction-if-contains-last-
// replica while the node holds the last healthy replica of a volume;
// allow-if-replica-is-stopped only while such a replica runs;
// block-for-eviction while the node holds any replica that has not failed
// (pure).
func imNeedsPDB(policy, node string, replicas []*longhorn.Replica) bool {
	switch policy {
	case drainAlwaysAllow:
		return false
	case drainBlockForEviction:
		for _, r := range replicas {
			if r.Spec.NodeID == node && !deleting(r) && !failed(r) {
				return true
			}
		}
		return false
	}
	return holdsLastHealthy(policy, node, replicas)
}

// holdsLastHealthy reports whether node holds the only healthy replica of
// some volume (under allow-if-replica-is-stopped: the only one, running);
// replicas are those of any volumes (pure).
func holdsLastHealthy(policy, node string, replicas []*longhorn.Replica) bool {
	here, elsewhere := map[string]bool{}, map[string]bool{}
	for _, r := range replicas {
		if deleting(r) || failed(r) || r.Spec.HealthyAt == "" || r.Spec.NodeID == "" {
			continue
		}
		switch {
		case r.Spec.NodeID != node:
			elsewhere[r.Spec.VolumeName] = true
		case policy == drainAllowIfReplicaIsStopped && !running(r):
		default:
			here[r.Spec.VolumeName] = true
		}
	}
	for v := range here {
		if !elsewhere[v] {
			return true
		}
	}
	return false
}

// drainEvicts decides whether replica r is evicted by node-drain-policy, as
// Longhorn's node controller does once a Kubernetes node is cordoned (it
// cannot tell a drain from a cordon): under block-for-eviction every
// replica on a cordoned node; under block-for-eviction-if-contains-last-
// replica one that is its volume's last healthy replica (volume are that
// volume's replicas), and stays so until the node is uncordoned, so that a
// replica rebuilt elsewhere does not cancel the eviction it was made for
// (pure).
func drainEvicts(policy string, cordoned bool, r *longhorn.Replica, volume []*longhorn.Replica) bool {
	if !cordoned || r.Spec.NodeID == "" || deleting(r) || failed(r) {
		return false
	}
	switch policy {
	case drainBlockForEviction:
		return true
	case drainBlockForEvictionIfContainsLastReplica:
		return r.Spec.EvictionRequested || holdsLastHealthy(policy, r.Spec.NodeID, volume)
	}
	return false
}

// imPDB is the PodDisruptionBudget of im's pod: same name, minAvailable 1,
// owned by the InstanceManager.
func imPDB(im *longhorn.InstanceManager, namespace string) *policyv1.PodDisruptionBudget {
	one, isController := intstr.FromInt32(1), true
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: im.Name, Namespace: namespace,
			Labels: map[string]string{types.LonghornLabelInstanceManager: im.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: longhorn.SchemeGroupVersion.String(), Kind: "InstanceManager",
				Name: im.Name, UID: im.UID, Controller: &isController}}},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
			types.LonghornLabelComponent:       types.LonghornComponentInstanceManager,
			types.LonghornLabelInstanceManager: im.Name}}},
	}
}

// reconcilePDB creates or deletes im's PodDisruptionBudget per
// node-drain-policy (imNeedsPDB), and keeps it under every policy while an
// engine runs in im: Longhorn removes an instance manager's PDB only once
// every volume is detached from its node (canDeleteInstanceManagerPDB), so
// that a drain never kills the engine of an attached volume.
func (c *InstanceManagerController) reconcilePDB(ctx context.Context, im *longhorn.InstanceManager) error {
	policy, err := c.ds.GetSettingValue(ctx, types.SettingNameNodeDrainPolicy)
	if err != nil {
		return err
	}
	replicas, err := c.ds.ListReplicasRO(ctx, nil)
	if err != nil {
		return err
	}
	want := len(im.Status.InstanceEngines) > 0 || imNeedsPDB(policy, im.Spec.NodeID, replicas)
	_, err = c.pdbs.PodDisruptionBudgets(c.opts.Namespace).Get(im.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	pdbs := c.kube.PolicyV1().PodDisruptionBudgets(c.opts.Namespace)
	switch decidePDB(want, err == nil) {
	case pdbCreate:
		if _, err := pdbs.Create(ctx, imPDB(im, c.opts.Namespace), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PodDisruptionBudget %s: %w", im.Name, err)
		}
	case pdbDelete:
		if err := pdbs.Delete(ctx, im.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete PodDisruptionBudget %s: %w", im.Name, err)
		}
	}
	return nil
}

// pdbAction is what reconcilePDB does to an instance manager's
// PodDisruptionBudget.
type pdbAction int

const (
	pdbKeep pdbAction = iota
	pdbCreate
	pdbDelete
)

// decidePDB compares the wanted PodDisruptionBudget with the one in the
// informer cache (exists). The cache may lag a write of this controller: a
// create it has not seen yet is answered AlreadyExists and a delete
// NotFound, both taken as done (pure).
func decidePDB(want, exists bool) pdbAction {
	switch {
	case want && !exists:
		return pdbCreate
	case !want && exists:
		return pdbDelete
	}
	return pdbKeep
}

// reconcileAutoEvicting sets n's status.autoEvicting, as Longhorn does: true
// while its Kubernetes node kn is cordoned under a block-for-eviction drain
// policy and a replica on it is being evicted.
func (c *NodeController) reconcileAutoEvicting(ctx context.Context, n *longhorn.Node, kn *corev1.Node) error {
	n.Status.AutoEvicting = false
	if kn == nil || !kn.Spec.Unschedulable {
		return nil
	}
	policy, err := c.ds.GetSettingValue(ctx, types.SettingNameNodeDrainPolicy)
	if err != nil || (policy != drainBlockForEviction && policy != drainBlockForEvictionIfContainsLastReplica) {
		return err
	}
	replicas, err := c.ds.ListReplicasByNodeRO(ctx, n.Name)
	if err != nil {
		return err
	}
	for _, r := range replicas {
		if r.Spec.EvictionRequested && !deleting(r) {
			n.Status.AutoEvicting = true
		}
	}
	return nil
}
