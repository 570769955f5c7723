package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
// volume's last healthy replica and deletes it under always-allow. It reads
// the PDB from the informer cache, so each step waits for the cache to show
// the previous one's write.
func TestDrainPolicyPDB(t *testing.T) {
	f, _ := attachedHealthy(t)
	c := fixtureController[*InstanceManagerController](f)
	im := f.instanceManager()
	pdbs := f.kube.PolicyV1().PodDisruptionBudgets(testNS)
	reconcile := func(wantPDB bool) {
		t.Helper()
		if err := c.reconcilePDB(f.ctx, im); err != nil {
			t.Fatal(err)
		}
		_, err := pdbs.Get(f.ctx, im.Name, metav1.GetOptions{})
		if (err == nil) != wantPDB || (err != nil && !apierrors.IsNotFound(err)) {
			t.Fatalf("PDB present %v, want %v (%v)", err == nil, wantPDB, err)
		}
		f.waitPDBCache(im.Name, wantPDB)
	}
	// Three healthy replicas: no PDB.
	reconcile(false)
	// Only n1's replica is healthy: a PDB.
	for _, r := range f.replicas("vol") {
		if r.Spec.NodeID != im.Spec.NodeID {
			r.Spec.FailedAt = "2026-12-02T00:00:00Z"
			f.updateReplica(r)
		}
	}
	f.settle()
	reconcile(true)
	pdb, err := pdbs.Get(f.ctx, im.Name, metav1.GetOptions{})
	if err != nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels[types.LonghornLabelInstanceManager] != im.Name {
		t.Fatalf("PDB %+v %v", pdb, err)
	}
	// A PDB deleted by someone else comes back at the next reconcile.
	if err := pdbs.Delete(f.ctx, im.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitPDBCache(im.Name, false)
	reconcile(true)
	f.setSetting(types.SettingNameNodeDrainPolicy, drainAlwaysAllow)
	reconcile(false)
	// An engine runs in the instance manager: a PDB under every policy,
	// always-allow too (Longhorn waits for the volumes to detach).
	im.Status.InstanceEngines = map[string]longhorn.InstanceProcess{"vol-e-0": {}}
	reconcile(true)
	im.Status.InstanceEngines = nil
	reconcile(false)
}

// waitPDBCache waits until the PDB informer cache shows (present) or no
// longer shows the PodDisruptionBudget name.
func (f *fixture) waitPDBCache(name string, present bool) {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := f.m.env.pdbs.PodDisruptionBudgets(testNS).Get(name)
		if (err == nil) == present {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("PDB %s present=%v not in the informer cache: %v", name, present, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// decidePDB creates a wanted PDB the cache does not show, deletes an
// unwanted one it shows, and otherwise does nothing.
func TestDecidePDB(t *testing.T) {
	for _, c := range []struct {
		want, exists bool
		act          pdbAction
	}{{true, false, pdbCreate}, {true, true, pdbKeep}, {false, true, pdbDelete}, {false, false, pdbKeep}} {
		if got := decidePDB(c.want, c.exists); got != c.act {
			t.Errorf("want %v exists %v: %v, want %v", c.want, c.exists, got, c.act)
		}
	}
}

// The block-for-eviction policies: block-for-eviction blocks while the node
// holds any replica that has not failed, the -if-contains-last-replica one
// as block-if-contains-last-replica.
func TestDrainPolicyDecisionForEviction(t *testing.T) {
	twoHealthy := []*longhorn.Replica{drainReplica("a", "n1", true, true), drainReplica("a", "n2", true, true)}
	lastStopped := []*longhorn.Replica{drainReplica("a", "n1", true, false)}
	failedHere := []*longhorn.Replica{drainReplica("a", "n1", true, true), drainReplica("a", "n2", true, true)}
	failedHere[0].Spec.FailedAt = "2026-12-02T00:00:00Z"
	for _, c := range []struct {
		policy   string
		replicas []*longhorn.Replica
		want     bool
	}{
		{drainBlockForEviction, twoHealthy, true},
		{drainBlockForEviction, lastStopped, true},
		{drainBlockForEviction, failedHere, false},
		{drainBlockForEviction, nil, false},
		{drainBlockForEvictionIfContainsLastReplica, twoHealthy, false},
		{drainBlockForEvictionIfContainsLastReplica, lastStopped, true},
	} {
		if got := imNeedsPDB(c.policy, "n1", c.replicas); got != c.want {
			t.Errorf("%s with %d replicas: PDB %v, want %v", c.policy, len(c.replicas), got, c.want)
		}
	}
}

// drainEvicts: only on a cordoned node; block-for-eviction evicts every
// replica there, the -if-contains-last-replica policy only a volume's last
// healthy one, and keeps evicting it once a replica elsewhere is healthy.
func TestDrainEvicts(t *testing.T) {
	last := []*longhorn.Replica{drainReplica("a", "n1", true, true), drainReplica("a", "n2", false, true)}
	two := []*longhorn.Replica{drainReplica("a", "n1", true, true), drainReplica("a", "n2", true, true)}
	marked := []*longhorn.Replica{drainReplica("a", "n1", true, true), drainReplica("a", "n2", true, true)}
	marked[0].Spec.EvictionRequested = true
	for _, c := range []struct {
		name     string
		policy   string
		cordoned bool
		replicas []*longhorn.Replica
		want     bool
	}{
		{"not cordoned", drainBlockForEviction, false, two, false},
		{"any replica", drainBlockForEviction, true, two, true},
		{"last healthy", drainBlockForEvictionIfContainsLastReplica, true, last, true},
		{"not the last", drainBlockForEvictionIfContainsLastReplica, true, two, false},
		{"already evicting", drainBlockForEvictionIfContainsLastReplica, true, marked, true},
		{"block policy never evicts", drainBlockIfContainsLastReplica, true, last, false},
		{"always-allow never evicts", drainAlwaysAllow, true, last, false},
	} {
		if got := drainEvicts(c.policy, c.cordoned, c.replicas[0], c.replicas); got != c.want {
			t.Errorf("%s (%s): evict %v, want %v", c.name, c.policy, got, c.want)
		}
	}
}

// cordon sets spec.unschedulable of the Kubernetes node name (creating it),
// and the Longhorn node's Schedulable condition as the node controller does,
// then waits for the caches.
func (f *fixture) cordon(name string, on bool) {
	f.t.Helper()
	nodes := f.kube.CoreV1().Nodes()
	kn, err := nodes.Get(f.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		kn, err = nodes.Create(f.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	}
	if err != nil {
		f.t.Fatal(err)
	}
	kn.Spec.Unschedulable = on
	if _, err := nodes.Update(f.ctx, kn, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	n, err := f.lh.LonghornV1beta2().Nodes(testNS).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	n.Status.Conditions = setCond(n.Status.Conditions, longhorn.NodeConditionTypeSchedulable, !on, "", "", "")
	if _, err := f.lh.LonghornV1beta2().Nodes(testNS).UpdateStatus(f.ctx, n, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	lister := fixtureController[*VolumeController](f).kubeNodes
	waitFor(f.t, func() bool {
		got, err := lister.Get(name)
		return err == nil && got.Spec.Unschedulable == on
	})
	f.settle()
}

// block-for-eviction: cordoning n2 evicts its replica (EvictionAutomatic,
// node status autoEvicting), a replica is rebuilt on n4, and the one on n2
// goes only once three healthy replicas run elsewhere; n2's PDB stays until
// then. Uncordoning before that cancels the eviction (EvictionCanceled).
func TestDrainBlockForEvictionOnCordon(t *testing.T) {
	f, modes := attachedHealthy(t, append(readyNode("n4"), setting(types.SettingNameNodeDrainPolicy, drainBlockForEviction))...)
	f.cordon("n2", true)
	f.syncVolume("vol")
	old := f.replicaOn("vol", "n2")
	if old == nil || !old.Spec.EvictionRequested {
		t.Fatalf("replica on cordoned n2 not marked for eviction: %+v", old)
	}
	nc := fixtureController[*NodeController](f)
	n2, err := f.ds.GetNodeRO(f.ctx, "n2")
	if err != nil {
		t.Fatal(err)
	}
	n2 = n2.DeepCopy()
	kn2, _ := nc.kubeNodes.Get("n2")
	f.settle()
	if err := nc.reconcileAutoEvicting(f.ctx, n2, kn2); err != nil || !n2.Status.AutoEvicting {
		t.Fatalf("node n2 autoEvicting %v (%v), want true", n2.Status.AutoEvicting, err)
	}
	replicas, _ := f.ds.ListReplicasRO(f.ctx, nil)
	if !imNeedsPDB(drainBlockForEviction, "n2", replicas) {
		t.Fatal("no PDB on n2 while its replica is evicted")
	}
	f.syncVolume("vol")
	fresh := f.replicaOn("vol", "n4")
	if fresh == nil {
		t.Fatalf("no replacement on n4: %d replicas", len(f.replicas("vol")))
	}
	f.runReplicas("vol")
	modes[fresh.Name] = longhorn.ReplicaModeRW
	f.runEngine("vol-e-0", modes)
	f.syncVolume("vol")
	f.syncVolume("vol")
	if r := f.replicaOn("vol", "n2"); r != nil && r.DeletionTimestamp == nil {
		t.Fatalf("evicted replica on n2 kept with three healthy replicas elsewhere: %+v", r)
	}
	if !strings.Contains(strings.Join(f.events(), "\n"), "EvictionAutomatic") {
		t.Error("no EvictionAutomatic event")
	}
	// n3 cordoned then uncordoned before a replacement is healthy: canceled.
	f.cordon("n3", true)
	f.syncVolume("vol")
	if r := f.replicaOn("vol", "n3"); r == nil || !r.Spec.EvictionRequested {
		t.Fatalf("replica on cordoned n3 not marked: %+v", r)
	}
	f.cordon("n3", false)
	f.syncVolume("vol")
	if r := f.replicaOn("vol", "n3"); r == nil || r.Spec.EvictionRequested {
		t.Fatalf("replica on uncordoned n3: %+v, want kept, not evicting", r)
	}
	if !strings.Contains(strings.Join(f.events(), "\n"), "EvictionCanceled") {
		t.Error("no EvictionCanceled event")
	}
}

// The instance-manager controller follows replica changes that move a PDB
// decision and ignores the rest.
func TestOnReplicaPDBChange(t *testing.T) {
	base := testReplica("r", longhorn.InstanceStateRunning)
	base.Spec.NodeID, base.Spec.HealthyAt = "n1", "2026-01-01T00:00:00Z"
	for name, tc := range map[string]struct {
		edit func(r *longhorn.Replica)
		want bool
	}{
		"node":       {func(r *longhorn.Replica) { r.Spec.NodeID = "n2" }, true},
		"failed":     {func(r *longhorn.Replica) { r.Spec.FailedAt = "2026-01-01T00:00:01Z" }, true},
		"healthy":    {func(r *longhorn.Replica) { r.Spec.HealthyAt = "" }, true},
		"evicting":   {func(r *longhorn.Replica) { r.Spec.EvictionRequested = true }, true},
		"stopped":    {func(r *longhorn.Replica) { r.Status.CurrentState = longhorn.InstanceStateStopped }, true},
		"deleting":   {func(r *longhorn.Replica) { now := metav1.Now(); r.DeletionTimestamp = &now }, true},
		"port only":  {func(r *longhorn.Replica) { r.Status.Port = 10001 }, false},
		"label only": {func(r *longhorn.Replica) { r.Labels = map[string]string{"x": "y"} }, false},
	} {
		n := base.DeepCopy()
		tc.edit(n)
		got := false
		onReplicaPDBChange(func(any) { got = true }).UpdateFunc(base, n)
		if got != tc.want {
			t.Errorf("%s: enqueued %v, want %v", name, got, tc.want)
		}
	}
}
