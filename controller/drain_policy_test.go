package controller

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

func drainReplica(vol, node string, healthy, run bool) *longhorn.Replica {
	r := &longhorn.Replica{}
	r.Name, r.Spec.VolumeName, r.Spec.NodeID = vol+"-"+node, vol, node
	if healthy {
		r.Spec.HealthyAt = "2026-12-02T00:00:00Z"
	}
	if run {
		r.Status.CurrentState = longhorn.InstanceStateRunning
	}
	return r
}

// Each node-drain-policy decides the instance manager's PDB as Longhorn
// documents it.
func TestDrainPolicyDecision(t *testing.T) {
	lastRunning := []*longhorn.Replica{drainReplica("a", "n1", true, true), drainReplica("a", "n2", false, true)}
	lastStopped := []*longhorn.Replica{drainReplica("a", "n1", true, false)}
	twoHealthy := []*longhorn.Replica{drainReplica("a", "n1", true, true), drainReplica("a", "n2", true, true)}
	for _, c := range []struct {
		policy   string
		replicas []*longhorn.Replica
		want     bool
	}{
		{drainBlockIfContainsLastReplica, lastRunning, true},
		{drainBlockIfContainsLastReplica, lastStopped, true},
		{drainBlockIfContainsLastReplica, twoHealthy, false},
		{drainAllowIfReplicaIsStopped, lastRunning, true},
		{drainAllowIfReplicaIsStopped, lastStopped, false},
		{drainAlwaysAllow, lastRunning, false},
		{drainBlockIfContainsLastReplica, nil, false},
	} {
		if got := imNeedsPDB(c.policy, "n1", c.replicas); got != c.want {
			t.Errorf("%s with %d replicas: PDB %v, want %v", c.policy, len(c.replicas), got, c.want)
		}
	}
}

// The instance manager controller creates the PDB while its node holds a
// volume's last healthy replica and deletes it under always-allow.
func TestDrainPolicyPDB(t *testing.T) {
	f, _ := attachedHealthy(t)
	c := fixtureController[*InstanceManagerController](f)
	im := f.instanceManager()
	pdbs := f.kube.PolicyV1().PodDisruptionBudgets(testNS)
	// Three healthy replicas: no PDB.
	if err := c.reconcilePDB(f.ctx, im); err != nil {
		t.Fatal(err)
	}
	if _, err := pdbs.Get(f.ctx, im.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("PDB with replicas elsewhere: %v", err)
	}
	// Only n1's replica is healthy: a PDB.
	for _, r := range f.replicas("vol") {
		if r.Spec.NodeID != im.Spec.NodeID {
			r.Spec.FailedAt = "2026-12-02T00:00:00Z"
			f.updateReplica(r)
		}
	}
	f.settle()
	if err := c.reconcilePDB(f.ctx, im); err != nil {
		t.Fatal(err)
	}
	pdb, err := pdbs.Get(f.ctx, im.Name, metav1.GetOptions{})
	if err != nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels[types.LonghornLabelInstanceManager] != im.Name {
		t.Fatalf("PDB %+v %v", pdb, err)
	}
	f.setSetting(types.SettingNameNodeDrainPolicy, drainAlwaysAllow)
	if err := c.reconcilePDB(f.ctx, im); err != nil {
		t.Fatal(err)
	}
	if _, err := pdbs.Get(f.ctx, im.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("PDB kept under always-allow: %v", err)
	}
}
