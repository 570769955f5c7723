package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/controller/monitor"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

var t0 = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

func kubeNode(ready corev1.ConditionStatus, since time.Duration, extra ...corev1.NodeCondition) *corev1.Node {
	conds := append([]corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready,
		LastTransitionTime: metav1.NewTime(t0.Add(-since))}}, extra...)
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: conds}}
}

func lease(age time.Duration) *coordinationv1.Lease {
	secs := int32(15)
	rt := metav1.NewMicroTime(t0.Add(-age))
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &rt, LeaseDurationSeconds: &secs}}
}

func TestDecideNodeReady(t *testing.T) {
	cases := []struct {
		name   string
		kn     *corev1.Node
		lease  *coordinationv1.Lease
		reason string // "" = ready
		down   bool
	}{
		{"healthy", kubeNode(corev1.ConditionTrue, time.Hour), lease(time.Second), "", false},
		{"kubernetes node gone", nil, lease(time.Second), longhorn.NodeConditionReasonKubernetesNodeGone, true},
		{"not ready briefly", kubeNode(corev1.ConditionFalse, 14*time.Second), lease(time.Second), "", false},
		{"not ready 15 s", kubeNode(corev1.ConditionFalse, 15*time.Second), lease(time.Second), longhorn.NodeConditionReasonKubernetesNodeNotReady, true},
		{"disk pressure", kubeNode(corev1.ConditionTrue, time.Hour, corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue}),
			lease(time.Second), longhorn.NodeConditionReasonKubernetesNodePressure, false},
		{"no lease", kubeNode(corev1.ConditionTrue, time.Hour), nil, longhorn.NodeConditionReasonManagerPodMissing, true},
		{"lease at 14 s", kubeNode(corev1.ConditionTrue, time.Hour), lease(14 * time.Second), "", false},
		{"lease expired at 15 s", kubeNode(corev1.ConditionTrue, time.Hour), lease(15 * time.Second), longhorn.NodeConditionReasonManagerPodMissing, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decideNodeReady(tc.kn, tc.lease, t0)
			if (tc.reason == "") != (r.Status == longhorn.ConditionStatusTrue) || r.Reason != tc.reason {
				t.Fatalf("got %+v, want reason %q", r, tc.reason)
			}
			if isNodeDownReason(r.Reason) != tc.down {
				t.Fatalf("down = %v, want %v", isNodeDownReason(r.Reason), tc.down)
			}
		})
	}
	if d := leaseExpiresIn(lease(5*time.Second), t0); d != 10*time.Second {
		t.Fatalf("leaseExpiresIn = %v", d)
	}
	// The node controller looks again when the NotReady grace ends.
	for _, g := range []struct {
		kn   *corev1.Node
		want time.Duration
	}{
		{kubeNode(corev1.ConditionFalse, 4*time.Second), 11 * time.Second},
		{kubeNode(corev1.ConditionFalse, 15*time.Second), 0},
		{kubeNode(corev1.ConditionTrue, time.Second), 0},
		{nil, 0},
	} {
		if d := notReadyGraceLeft(g.kn, t0); d != g.want {
			t.Errorf("notReadyGraceLeft = %v, want %v", d, g.want)
		}
	}
}

func diskNode(disks map[string]longhorn.DiskSpec) *longhorn.Node {
	return &longhorn.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: longhorn.NodeSpec{Disks: disks}}
}

func TestDecideDiskStatuses(t *testing.T) {
	gib := int64(1) << 30
	probe := func(uuid, fsid string, maxG, availG int64) diskProbe {
		return diskProbe{Config: monitor.DiskConfig{DiskUUID: uuid}, Stat: monitor.DiskStat{FSID: fsid, FSType: "ext4",
			StorageMaximum: maxG * gib, StorageAvailable: availG * gib}}
	}
	n := diskNode(map[string]longhorn.DiskSpec{
		"a": {Type: "filesystem", Path: "/a", AllowScheduling: true},
		"b": {Type: "filesystem", Path: "/b", AllowScheduling: true},
		"c": {Type: "filesystem", Path: "/c", AllowScheduling: true},
		"d": {Type: "filesystem", Path: "/d", AllowScheduling: true},
		"e": {Type: "filesystem", Path: "/e", AllowScheduling: true},
	})
	n.Status.DiskStatus = map[string]*longhorn.DiskStatus{"e": {DiskUUID: "old-uuid"}}
	probes := map[string]diskProbe{
		"a": probe("ua", "fs1", 100, 80),
		"b": probe("ub", "fs1", 100, 80),        // same filesystem as a
		"c": {Err: errors.New("no such file")},  // unreadable
		"d": probe("ud", "fs4", 100, 25),        // at the minimal-available line
		"e": probe("new-uuid", "fs5", 100, 100), // disk replaced
	}
	replicas := []*longhorn.Replica{
		{ObjectMeta: metav1.ObjectMeta{Name: "r1"}, Spec: longhorn.ReplicaSpec{DiskID: "ua", InstanceSpec: longhorn.InstanceSpec{VolumeSize: 10 * gib}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "r2"}, Spec: longhorn.ReplicaSpec{DiskID: "ua", InstanceSpec: longhorn.InstanceSpec{VolumeSize: 5 * gib}}},
	}
	got := decideDiskStatuses(n, probes, replicas, capacitySettings{OverProvisioningPercentage: 100, MinimalAvailablePercentage: 25}, "now")
	want := map[string]struct {
		ready, sched bool
		reason       string
	}{
		"a": {true, true, ""},
		"b": {false, false, longhorn.DiskConditionReasonDiskNotReady},
		"c": {false, false, longhorn.DiskConditionReasonNoDiskInfo},
		"d": {true, false, longhorn.DiskConditionReasonDiskPressure},
		"e": {false, false, longhorn.DiskConditionReasonDiskFilesystemChanged},
	}
	for name, w := range want {
		st := got[name]
		rc := longhorn.GetCondition(st.Conditions, longhorn.DiskConditionTypeReady)
		sc := longhorn.GetCondition(st.Conditions, longhorn.DiskConditionTypeSchedulable)
		if condTrue(st.Conditions, longhorn.DiskConditionTypeReady) != w.ready || condTrue(st.Conditions, longhorn.DiskConditionTypeSchedulable) != w.sched {
			t.Errorf("disk %s: ready %v sched %v, want %v %v (%+v %+v)", name, rc.Status, sc.Status, w.ready, w.sched, rc, sc)
		}
		if w.reason != "" && rc.Reason != w.reason && sc.Reason != w.reason {
			t.Errorf("disk %s: reasons %q/%q, want %q", name, rc.Reason, sc.Reason, w.reason)
		}
	}
	if a := got["a"]; a.StorageScheduled != 15*gib || len(a.ScheduledReplica) != 2 || a.DiskUUID != "ua" || a.StorageMaximum != 100*gib {
		t.Errorf("disk a: %+v", a)
	}
	// Unchanged input keeps the conditions as they are (no write churn).
	n.Status.DiskStatus = got
	again := decideDiskStatuses(n, probes, replicas, capacitySettings{OverProvisioningPercentage: 100, MinimalAvailablePercentage: 25}, "later")
	if !conditionsEqual(again["a"].Conditions, got["a"].Conditions) || again["a"].Conditions[0].LastProbeTime != "now" {
		t.Errorf("conditions rewritten: %+v", again["a"].Conditions)
	}
}

func TestDecideIMState(t *testing.T) {
	pod := func(phase corev1.PodPhase) *corev1.Pod { return &corev1.Pod{Status: corev1.PodStatus{Phase: phase}} }
	deleting := pod(corev1.PodRunning)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	cases := []struct {
		name      string
		down      bool
		pod       *corev1.Pod
		reachable bool
		want      longhorn.InstanceManagerState
	}{
		{"node down", true, pod(corev1.PodRunning), true, longhorn.InstanceManagerStateUnknown},
		{"no pod", false, nil, false, longhorn.InstanceManagerStateStopped},
		{"deleting", false, deleting, true, longhorn.InstanceManagerStateStopped},
		{"pending", false, pod(corev1.PodPending), false, longhorn.InstanceManagerStateStarting},
		{"running, answering", false, pod(corev1.PodRunning), true, longhorn.InstanceManagerStateRunning},
		{"running, silent", false, pod(corev1.PodRunning), false, longhorn.InstanceManagerStateStarting},
		{"failed", false, pod(corev1.PodFailed), false, longhorn.InstanceManagerStateError},
		{"unknown phase", false, pod(corev1.PodUnknown), false, longhorn.InstanceManagerStateUnknown},
	}
	for _, tc := range cases {
		if got := decideIMState(tc.down, tc.pod, tc.reachable); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestIMPod(t *testing.T) {
	im := &longhorn.InstanceManager{ObjectMeta: metav1.ObjectMeta{Name: "instance-manager-abc", UID: "u1"},
		Spec: longhorn.InstanceManagerSpec{Image: "longhorn:dev", NodeID: "n1"}}
	p := imPod(im, imPodParams{Namespace: "longhorn-system", ServiceAccount: "sa", DataPath: "/var/lib/longhorn"})
	c := p.Spec.Containers[0]
	if p.Spec.NodeName != "n1" || p.Spec.HostNetwork || c.Image != "longhorn:dev" || !*c.SecurityContext.Privileged ||
		p.Spec.ServiceAccountName != "sa" || p.OwnerReferences[0].UID != "u1" || p.Annotations[multusNetworksAnnotation] != "" {
		t.Fatalf("pod %+v", p)
	}
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, "instance-manager --listen $(POD_IP):8500 --proxy-listen $(POD_IP):8501") || c.Env[0].ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Fatalf("args %q env %+v", args, c.Env)
	}
	p = imPod(im, imPodParams{Namespace: "longhorn-system", StorageNetwork: "kube-system/storage", DataPath: "/var/lib/longhorn"})
	if got := p.Annotations[multusNetworksAnnotation]; got != `[{"interface":"lhnet1","name":"storage","namespace":"kube-system"}]` {
		t.Fatalf("multus annotation %q", got)
	}
	p.Annotations[multusStatusAnnotation] = `[{"name":"cbr0","interface":"eth0","ips":["10.0.0.5"]},{"name":"kube-system/storage","interface":"lhnet1","ips":["192.168.9.5"]}]`
	p.Status.PodIP = "10.0.0.5"
	if ip := storageIPOf(p); ip != "192.168.9.5" {
		t.Fatalf("storage IP %q", ip)
	}
	plain := imPod(im, imPodParams{DataPath: "/x"})
	plain.Status.PodIP = "10.0.0.6"
	// Multus 4 leaves "interface" out of the default network's entry.
	p.Annotations[multusStatusAnnotation] = `[{"name":"cbr0","ips":["10.0.0.5"],"default":true,"dns":{}},{"name":"kube-system/storage","interface":"lhnet1","ips":["192.168.9.7"],"mac":"aa:bb:cc:dd:ee:ff","dns":{}}]`
	if ip := storageIPOf(p); ip != "192.168.9.7" {
		t.Fatalf("storage IP from Multus 4 status %q", ip)
	}
	// No status (yet) or no lhnet1 in it: no storage IP.
	p.Annotations[multusStatusAnnotation] = `[{"name":"cbr0","ips":["10.0.0.5"],"default":true}]`
	if ip := storageIPOf(p); ip != "" {
		t.Fatalf("storage IP without lhnet1 %q", ip)
	}
	// The storage network is the setting controller's to apply
	// (TestStorageNetworkRestartsInstanceManagerPods), not a recreate.
	if storageIPOf(plain) != "10.0.0.6" || podNeedsRecreate(plain, p) || podNeedsRecreate(p, p) {
		t.Fatal("storage IP without network / recreate decision")
	}
}

func TestSelectTicketAndAttachNode(t *testing.T) {
	tk := func(id string, typ longhorn.AttacherType, node string) *longhorn.AttachmentTicket {
		return &longhorn.AttachmentTicket{ID: id, Type: typ, NodeID: node}
	}
	tickets := map[string]*longhorn.AttachmentTicket{
		"csi-attacher-b":     tk("csi-attacher-b", longhorn.AttacherTypeCSIAttacher, "n2"),
		"longhorn-api-z":     tk("longhorn-api-z", longhorn.AttacherTypeLonghornAPI, "n3"),
		"longhorn-api-a":     tk("longhorn-api-a", longhorn.AttacherTypeLonghornAPI, "n1"),
		"snapshot-controlle": tk("snapshot-controlle", longhorn.AttacherTypeSnapshotController, "n4"),
	}
	if got := selectTicket(tickets); got.ID != "longhorn-api-a" {
		t.Fatalf("selected %s, want the smallest ID among the highest priority", got.ID)
	}
	v := &longhorn.Volume{Status: longhorn.VolumeStatus{State: longhorn.VolumeStateDetached}}
	if n, by := decideAttachNode(v, tickets); n != "n1" || by == nil {
		t.Fatalf("detached volume goes to %q", n)
	}
	v.Spec.NodeID, v.Status.State = "n2", longhorn.VolumeStateAttached
	if n, _ := decideAttachNode(v, tickets); n != "n2" {
		t.Fatalf("a ticket still wants n2, got %q", n)
	}
	// attached in maintenance mode (a clone) while a CSI ticket for the
	// same node comes in: stays while the clone's ticket is there, then
	// detaches so that the CSI ticket gets the frontend
	v.Spec.DisableFrontend = true
	if n, _ := decideAttachNode(v, tickets); n != "" {
		t.Fatalf("only a frontend ticket wants n2 while the frontend is disabled: detach first, got %q", n)
	}
	clone := tk("volume-clone-controller-x", longhorn.AttacherTypeVolumeCloneController, "n2")
	clone.Parameters = map[string]string{longhorn.AttachmentParameterDisableFrontend: longhorn.TrueValue}
	tickets[clone.ID] = clone
	if n, _ := decideAttachNode(v, tickets); n != "n2" {
		t.Fatalf("the clone's ticket still wants n2 in maintenance mode, got %q", n)
	}
	delete(tickets, clone.ID)
	tickets["snapshot-any"] = tk("snapshot-any", longhorn.AttacherTypeSnapshotController, "n2")
	tickets["snapshot-any"].Parameters = map[string]string{longhorn.AttachmentParameterDisableFrontend: longhorn.AnyValue}
	if n, _ := decideAttachNode(v, tickets); n != "n2" {
		t.Fatalf("a ticket taking any frontend setting keeps n2, got %q", n)
	}
	delete(tickets, "snapshot-any")
	v.Spec.DisableFrontend = false
	delete(tickets, "csi-attacher-b")
	if n, _ := decideAttachNode(v, tickets); n != "" {
		t.Fatalf("no ticket for n2: detach first, got %q", n)
	}
	v.Spec.NodeID, v.Status.State = "", longhorn.VolumeStateDetaching
	if n, _ := decideAttachNode(v, tickets); n != "" {
		t.Fatalf("still detaching: wait, got %q", n)
	}
	if n, _ := decideAttachNode(&longhorn.Volume{Status: longhorn.VolumeStatus{State: longhorn.VolumeStateDetached}}, nil); n != "" {
		t.Fatal("no tickets: stays detached")
	}
}

func TestParseDefaultSettings(t *testing.T) {
	doc := `
default-replica-count: '{"v1":"2"}'
storage-over-provisioning-percentage: "150"
replica-soft-anti-affinity: true
storage-minimal-available-percentage: "250"
rebuild-concurrent-sync-limit: "2"
backup-compression-method: ~
node-down-pod-deletion-policy: delete-statefulset-pod
upgrade-checker: false
`
	vals, rejected, err := ParseDefaultSettings(doc)
	if err != nil {
		t.Fatal(err)
	}
	if vals["default-replica-count"] != `{"v1":"2"}` || vals["storage-over-provisioning-percentage"] != "150" || vals["replica-soft-anti-affinity"] != "true" {
		t.Fatalf("values %v", vals)
	}
	if _, ok := rejected["storage-minimal-available-percentage"]; !ok {
		t.Fatalf("out-of-range value accepted: %v", rejected)
	}
	if _, ok := rejected["rebuild-concurrent-sync-limit"]; !ok {
		t.Fatalf("unknown name (the chart's bug) accepted: %v", rejected)
	}
	if _, ok := vals["backup-compression-method"]; ok {
		t.Fatal("null value applied")
	}
	if why := rejected["node-down-pod-deletion-policy"]; !strings.Contains(why, "not supported yet") {
		t.Fatalf("node-down-pod-deletion-policy delete-statefulset-pod (not supported yet) not rejected as such: %q", why)
	}
	if vals["upgrade-checker"] != "false" {
		t.Fatalf("inert upgrade-checker=false not applied: %v %v", vals, rejected)
	}
	if _, _, err := ParseDefaultSettings("a: [b"); err == nil {
		t.Fatal("broken YAML accepted")
	}
}
