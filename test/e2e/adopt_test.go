package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/testbed/framework"
)

// TestAdoptReplicaDirectories is the README's "Moving from Longhorn" on
// the local cluster: a volume's replica directories are left on the nodes'
// disks with no Volume or Replica object (as after an uninstall that kept
// the data, or old disks under a new cluster); `longhorn adopt`, run in
// each node's manager pod as the README says, recreates the Volume and
// Replica objects; the volume attaches and its data reads back intact,
// both replicas healthy, without a copy.
func TestAdoptReplicaDirectories(t *testing.T) {
	e := setup(t)
	const vol = "e2e-adopt"
	e.createVolume(vol, 2)
	ep := e.attach(vol, e.c.NodeName(1))
	e.waitHealthy(vol, 2, rebuildTimeout)
	data := framework.DataSet{Seed: 7, Offset: 8 << 20, Size: dataSize}
	e.writeData(ep, data)
	e.detach(vol)

	// Keep the directories, then remove every object of the volume.
	saved := t.TempDir()
	dirs := map[int][]string{}
	for i := 1; i <= e.c.Nodes; i++ {
		for _, d := range e.replicaDirs(i, vol) {
			dirs[i] = append(dirs[i], d)
			copyTree(t, filepath.Join(e.c.NodeDir(i), "longhorn", "replicas", d), filepath.Join(saved, nodeTag(i), d))
		}
	}
	e.must(e.f.DeleteVolume(e.ctx, vol, 90*time.Second))
	e.checkNothingLeft(vol)
	for i, ds := range dirs {
		for _, d := range ds {
			copyTree(t, filepath.Join(saved, nodeTag(i), d), filepath.Join(e.c.NodeDir(i), "longhorn", "replicas", d))
		}
	}

	// README: on every node, `longhorn adopt` in the node's manager pod.
	for i := range dirs {
		pod := e.managerPod(e.c.NodeName(i))
		out, err := e.f.Kubectl(e.ctx, "-n", lhNamespace, "exec", pod, "--", "longhorn", "adopt", "--frontend", "nbd")
		e.must(err)
		t.Logf("adopt on %s:\n%s", e.c.NodeName(i), out)
		if !strings.Contains(string(out), vol) {
			t.Fatalf("adopt on %s did not take %s:\n%s", e.c.NodeName(i), vol, out)
		}
	}
	v, err := e.f.Volume(e.ctx, vol)
	e.must(err)
	if v.Spec.NumberOfReplicas != 2 || v.Spec.Size != volSize {
		t.Fatalf("adopted volume: %d replicas, %d bytes", v.Spec.NumberOfReplicas, v.Spec.Size)
	}
	ep = e.attach(vol, e.c.NodeName(2))
	e.verifyData(ep, data)
	e.waitHealthy(vol, 2, rebuildTimeout)
	for i, ds := range dirs {
		if got := e.replicaDirs(i, vol); strings.Join(got, ",") != strings.Join(ds, ",") {
			t.Fatalf("%s: replica directories %v after adoption, want the adopted %v", e.c.NodeName(i), got, ds)
		}
	}
	e.detach(vol)
}

func nodeTag(i int) string { return "node" + string(rune('0'+i)) }

// copyTree copies a replica directory, keeping holes.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("mkdir", "-p", filepath.Dir(to)).CombinedOutput(); err != nil {
		t.Fatalf("mkdir: %v %s", err, out)
	}
	if out, err := exec.Command("cp", "-a", "--sparse=always", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp %s %s: %v %s", from, to, err, out)
	}
}

// managerPod is the name of the longhorn-manager pod on node.
func (e *testEnv) managerPod(node string) string {
	e.t.Helper()
	out, err := e.f.Kubectl(e.ctx, "-n", lhNamespace, "get", "pods", "-l", "app=longhorn-manager",
		"--field-selector", "spec.nodeName="+node, "-o", "jsonpath={.items[0].metadata.name}")
	e.must(err)
	return strings.TrimSpace(string(out))
}
