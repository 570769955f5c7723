package controller

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Manager liveness. Longhorn decides that a node's manager is gone from its
// DaemonSet pod; here every manager also renews a coordination.k8s.io Lease
// named ManagerLeasePrefix+<node>, so a manager that dies (or a test process
// that plays one) is noticed without a kubelet. A lease older than its
// duration counts as Longhorn's ManagerPodMissing, which hands the node's
// objects to other managers.
const (
	ManagerLeasePrefix = "longhorn-manager-"
	// LeaseDuration is how long a lease stays valid after a renewal;
	// LeaseRenewInterval is how often a manager renews its own.
	LeaseDuration      = 15 * time.Second
	LeaseRenewInterval = 5 * time.Second
	// kubeletNotReadyGrace: a Kubernetes Node NotReady for less than this is
	// ignored (Longhorn's ignoreKubeletNotReadyTime).
	kubeletNotReadyGrace = 15 * time.Second
)

// nodeReadiness is the outcome of the Ready-condition decision.
type nodeReadiness struct {
	Status  longhorn.ConditionStatus
	Reason  string
	Message string
}

// decideNodeReady computes a Longhorn node's Ready condition from its
// Kubernetes Node (nil when gone) and its manager lease (nil when missing),
// at time now:
//
//	Kubernetes Node gone                       -> False KubernetesNodeGone
//	Kubernetes Node NotReady for >= 15 s       -> False KubernetesNodeNotReady
//	Memory/Disk/PID pressure                   -> False KubernetesNodePressure
//	manager lease missing or expired           -> False ManagerPodMissing
//	otherwise                                  -> True
func decideNodeReady(kn *corev1.Node, lease *coordinationv1.Lease, now time.Time) nodeReadiness {
	if kn == nil {
		return nodeReadiness{longhorn.ConditionStatusFalse, longhorn.NodeConditionReasonKubernetesNodeGone, "Kubernetes node is gone"}
	}
	for _, c := range kn.Status.Conditions {
		switch c.Type {
		case corev1.NodeReady:
			if c.Status != corev1.ConditionTrue && now.Sub(c.LastTransitionTime.Time) >= kubeletNotReadyGrace {
				return nodeReadiness{longhorn.ConditionStatusFalse, longhorn.NodeConditionReasonKubernetesNodeNotReady,
					fmt.Sprintf("Kubernetes node is not ready: %s", c.Message)}
			}
		case corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure:
			if c.Status == corev1.ConditionTrue {
				return nodeReadiness{longhorn.ConditionStatusFalse, longhorn.NodeConditionReasonKubernetesNodePressure,
					fmt.Sprintf("Kubernetes node has %s", c.Type)}
			}
		}
	}
	if !leaseFresh(lease, now) {
		return nodeReadiness{longhorn.ConditionStatusFalse, longhorn.NodeConditionReasonManagerPodMissing,
			"the node's longhorn manager has not renewed its lease"}
	}
	return nodeReadiness{Status: longhorn.ConditionStatusTrue}
}

// notReadyGraceLeft is how long until a Kubernetes Node that turned
// NotReady less than kubeletNotReadyGrace ago counts as down (0 when it is
// Ready, gone, or already past the grace).
func notReadyGraceLeft(kn *corev1.Node, now time.Time) time.Duration {
	if kn == nil {
		return 0
	}
	for _, c := range kn.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			if left := kubeletNotReadyGrace - now.Sub(c.LastTransitionTime.Time); left > 0 {
				return left
			}
		}
	}
	return 0
}

// leaseFresh reports whether the lease was renewed within its duration.
func leaseFresh(l *coordinationv1.Lease, now time.Time) bool {
	if l == nil || l.Spec.RenewTime == nil {
		return false
	}
	d := LeaseDuration
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return now.Sub(l.Spec.RenewTime.Time) < d
}

// leaseExpiresIn is how long until the lease expires (0 when it has).
func leaseExpiresIn(l *coordinationv1.Lease, now time.Time) time.Duration {
	if !leaseFresh(l, now) {
		return 0
	}
	d := LeaseDuration
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return l.Spec.RenewTime.Add(d).Sub(now)
}

// isNodeDownReason reports whether a Ready=False reason hands the node's
// objects to other managers (Longhorn's IsNodeDownOrDeletedOrMissingManager;
// ManagerPodDown and KubernetesNodePressure do not).
func isNodeDownReason(reason string) bool {
	switch reason {
	case longhorn.NodeConditionReasonKubernetesNodeGone, longhorn.NodeConditionReasonKubernetesNodeNotReady,
		longhorn.NodeConditionReasonManagerPodMissing:
		return true
	}
	return false
}

// isInstanceDownReason reports whether a Ready=False reason means the
// node's instances cannot be trusted: the Kubernetes node is gone or not
// ready (Longhorn's IsNodeDownOrDeleted). A missing manager is not such a
// reason (it only hands ownership over, isNodeDownReason): the node's
// instance manager, engines and replicas run on without it.
func isInstanceDownReason(reason string) bool {
	switch reason {
	case longhorn.NodeConditionReasonKubernetesNodeGone, longhorn.NodeConditionReasonKubernetesNodeNotReady:
		return true
	}
	return false
}

// renewLease creates or renews this manager's lease once.
func renewLease(ctx context.Context, kube kubernetes.Interface, namespace, node string, now time.Time) error {
	leases := kube.CoordinationV1().Leases(namespace)
	name := ManagerLeasePrefix + node
	secs := int32(LeaseDuration / time.Second)
	renew := metav1.NewMicroTime(now)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: &secs,
				AcquireTime: &renew, RenewTime: &renew},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &node, &secs, &renew
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// releaseTimeout bounds the lease release at shutdown.
const releaseTimeout = 5 * time.Second

// releaseLease clears this manager's lease renewTime, so that the other
// managers see the node's manager missing at once (Longhorn's
// ManagerPodMissing as soon as the pod is gone) instead of LeaseDuration
// later. A missing lease is not an error.
func releaseLease(ctx context.Context, kube kubernetes.Interface, namespace, node string) error {
	leases := kube.CoordinationV1().Leases(namespace)
	l, err := leases.Get(ctx, ManagerLeasePrefix+node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	l.Spec.RenewTime = nil
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// runLeaseHeartbeat renews the lease every LeaseRenewInterval until ctx is
// done, then releases it (a manager that stops hands its node over at once;
// one that dies does so when the lease expires). Failures are logged and
// retried at the next tick.
func runLeaseHeartbeat(ctx context.Context, kube kubernetes.Interface, namespace, node string, now func() time.Time) {
	log := LoggerFrom(ctx).WithField("lease", ManagerLeasePrefix+node)
	t := time.NewTicker(LeaseRenewInterval)
	defer t.Stop()
	for {
		if err := renewLease(ctx, kube, namespace, node, now()); err != nil && ctx.Err() == nil {
			log.WithError(err).Warn("Failed to renew manager lease")
		}
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer cancel()
			if err := releaseLease(rctx, kube, namespace, node); err != nil {
				log.WithError(err).Warn("Failed to release manager lease")
			}
			return
		case <-t.C:
		}
	}
}
