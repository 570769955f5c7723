package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/testbed/framework"
)

// TestVolumeLifecycle: a 3-replica volume is created, attached on node-1,
// written and checksummed, detached, attached on node-2 where the data
// reads back intact, detached and deleted; afterwards no node holds a
// replica directory or an engine/replica process of it and no Engine,
// Replica or VolumeAttachment object is left.
func TestVolumeLifecycle(t *testing.T) {
	e := setup(t)
	const vol = "e2e-lifecycle"
	e.createVolume(vol, 3)
	n1, n2 := e.c.NodeName(1), e.c.NodeName(2)

	ep := e.attach(vol, n1)
	e.waitHealthy(vol, 3, rebuildTimeout)
	data := framework.DataSet{Seed: 1, Offset: 0, Size: dataSize}
	e.writeData(ep, data)
	tail := framework.DataSet{Seed: 2, Offset: volSize - 4<<20, Size: 4 << 20}
	e.writeData(ep, tail)
	e.detach(vol)

	ep = e.attach(vol, n2)
	if ep.Node != n2 {
		t.Fatalf("engine runs on %s, want %s", ep.Node, n2)
	}
	e.verifyData(ep, data)
	e.verifyData(ep, tail)
	e.detach(vol)

	for i := 1; i <= e.c.Nodes; i++ {
		if len(e.replicaDirs(i, vol)) == 0 {
			t.Errorf("%s: no replica directory of %s before delete (want one per node)", e.c.NodeName(i), vol)
		}
	}
	t0 := time.Now()
	e.must(e.f.DeleteVolume(e.ctx, vol, 90*time.Second))
	t.Logf("deleted %s in %.1fs", vol, time.Since(t0).Seconds())
	e.checkNothingLeft(vol)
}

// checkNothingLeft waits (a replica directory is removed by its instance
// manager after the Replica object goes) until no node has a replica
// directory or a `longhorn engine` process of the volume, and checks that
// its VolumeAttachment is gone.
func (e *testEnv) checkNothingLeft(vol string) {
	e.t.Helper()
	var left []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		left = left[:0]
		for i := 1; i <= e.c.Nodes; i++ {
			for _, d := range e.replicaDirs(i, vol) {
				left = append(left, e.c.NodeName(i)+":"+filepath.Join("/var/lib/longhorn/replicas", d))
			}
		}
		left = append(left, instanceProcesses(vol)...)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if len(left) > 0 {
		e.t.Errorf("volume %s deleted but left: %s", vol, strings.Join(left, ", "))
	}
	if _, err := e.f.LH.LonghornV1beta2().VolumeAttachments(framework.Namespace).Get(e.ctx, vol, metav1.GetOptions{}); !framework.IsNotFound(err) {
		e.t.Errorf("VolumeAttachment %s: %v, want NotFound", vol, err)
	}
}

// instanceProcesses lists "pid argv" of every `longhorn engine ...` process
// on the machine whose arguments name the volume (engine and replica
// instance names and replica directories start with it).
func instanceProcesses(vol string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, en := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(argv) < 2 || filepath.Base(argv[0]) != "longhorn" || argv[1] != "engine" {
			continue
		}
		for _, a := range argv[2:] {
			if strings.Contains(a, vol+"-") || strings.HasSuffix(a, "/"+vol) || a == vol {
				out = append(out, "pid "+en.Name()+" "+strings.Join(argv, " "))
				break
			}
		}
	}
	return out
}
