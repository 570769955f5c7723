package controller

import (
	"strings"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// The instance-manager pod asks for the node's instanceManagerCPURequest,
// else guaranteed-instance-manager-cpu percent of the node's allocatable
// CPU; a change recreates an idle pod.
func TestInstanceManagerCPURequest(t *testing.T) {
	for _, c := range []struct {
		node        int
		pct         float64
		allocatable int64
		want        int64
	}{
		{0, 12, 2000, 240},
		{500, 12, 2000, 500},
		{0, 0, 2000, 0},
		{0, 12.5, 4000, 500},
		{0, 12, 0, 0},
	} {
		if got := imCPURequest(c.node, c.pct, c.allocatable); got != c.want {
			t.Errorf("imCPURequest(%d, %v, %d) = %d, want %d", c.node, c.pct, c.allocatable, got, c.want)
		}
	}
	im := &longhorn.InstanceManager{}
	im.Name, im.Spec.NodeID, im.Spec.Image = "im", "n1", "img"
	none := imPod(im, imPodParams{})
	with := imPod(im, imPodParams{CPURequest: 240})
	if q := with.Spec.Containers[0].Resources.Requests.Cpu(); q.MilliValue() != 240 {
		t.Errorf("cpu request %v, want 240m", q)
	}
	if len(none.Spec.Containers[0].Resources.Requests) != 0 {
		t.Errorf("request without a CPU request: %v", none.Spec.Containers[0].Resources.Requests)
	}
	if !podNeedsRecreate(none, with) || podNeedsRecreate(with, imPod(im, imPodParams{CPURequest: 240})) {
		t.Error("a changed CPU request must recreate the pod, an unchanged one not")
	}
}

// A pod of an instance manager older than the proxy (--no-proxy) is
// outdated for managers that start current ones, and the other way round.
func TestInstanceManagerPodNoProxyOutdated(t *testing.T) {
	im := &longhorn.InstanceManager{}
	im.Name, im.Spec.NodeID, im.Spec.Image = "im", "n1", "img"
	old, cur := imPod(im, imPodParams{NoProxy: true}), imPod(im, imPodParams{})
	if a := strings.Join(old.Spec.Containers[0].Args, " "); !strings.Contains(a, "--no-proxy") || len(old.Spec.Containers[0].Ports) != 1 {
		t.Fatalf("no-proxy pod: args %q ports %v", a, old.Spec.Containers[0].Ports)
	}
	if !podNeedsRecreate(old, cur) || !podNeedsRecreate(cur, old) || podNeedsRecreate(old, imPod(im, imPodParams{NoProxy: true})) {
		t.Error("a --no-proxy change must recreate the pod, an unchanged one not")
	}
}

// An engine starts with engine-replica-timeout, and with snapshot-max-count
// unless its volume sets its own limit (the engine takes 2..250).
func TestEngineLaunchSettings(t *testing.T) {
	e := &longhorn.Engine{}
	e.Name, e.Spec.VolumeName, e.Spec.VolumeSize = "vol-e-0", "vol", 1<<30
	e.Spec.ReplicaAddressMap = map[string]string{"r1": "10.0.0.1:10000"}
	im := &longhorn.InstanceManager{}
	im.Status.IP = "10.0.0.1"
	args := func(st engineLaunchSettings) string {
		spec, err := engineProcessSpec(e, im, st)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(spec.Args, " ")
	}
	if a := args(engineLaunchSettings{ReplicaTimeout: 12, SnapshotMaxCount: 100}); !strings.Contains(a, "--engine-replica-timeout 12") ||
		!strings.Contains(a, "--snapshot-max-count 100") {
		t.Errorf("args %q", a)
	}
	if a := args(engineLaunchSettings{SnapshotMaxCount: 1000}); !strings.Contains(a, "--snapshot-max-count 250") || strings.Contains(a, "--engine-replica-timeout") {
		t.Errorf("args %q", a)
	}
	e.Spec.SnapshotMaxCount = 5
	if a := args(engineLaunchSettings{SnapshotMaxCount: 100}); !strings.Contains(a, "--snapshot-max-count 5") || strings.Contains(a, "--snapshot-max-count 100") {
		t.Errorf("the volume's own limit: args %q", a)
	}
}
