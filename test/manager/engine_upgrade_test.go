package manager_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/internal/testutil"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// image2 is the second build of the live-upgrade test (the same binary
// under another image name, as two versions of the product).
const image2 = "longhorn:test-next"

// Sizes of the live-upgrade test's volume and of its write chunks.
const upgVolSize, upgChunk = 64 << 20, 64 << 10

// TestLiveEngineUpgrade is the manager side of a live engine upgrade, on
// three managers upgraded to a second build (image2) while an nbd volume
// attached on n1 keeps qemu-io writing (8 writes of 64 KiB in flight per
// round, reconnect-delay 20 s):
//
//  1. refusals: the REST engineUpgrade of an attached blockdev volume (the
//     live upgrade is not supported yet for that frontend), and a kubectl
//     change of spec.image while the volume is degraded or names an image
//     that is no engine image;
//  2. a failed upgrade: the new engine cannot start (its nbd socket cannot be
//     prepared), the change rolls back (spec.image restored, the new replicas
//     removed, event FailedEngineUpgrade) and the old engine keeps serving;
//  3. the automatic upgrade (concurrent-automatic-engine-upgrade-per-node-
//     limit 1) moves the volume live: new replicas on the same data
//     directories in the new instance managers, the new engine takes the
//     socket over, the old engine and replicas go.
//
// qemu-io sees no error; the volume read back through the new engine equals
// the model of every write byte for byte.
func TestLiveEngineUpgrade(t *testing.T) {
	testutil.RequireTool(t, "nbdcopy")
	c := newCluster(t)
	const vol, blk = "upg-vol", "upg-blk"
	c.applyVolume(t, vol)
	c.applyBlockdevVolume(t, blk)
	c.attach(vol, "n1")
	c.attach(blk, "n2")
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	c.waitState(blk, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	endpoint := c.hostEndpoint("n1", c.engineOf(vol).Status.Endpoint)
	q := testutil.StartQemuShell(t, socketOf(t, endpoint), vol)
	w := testutil.NewModelWriter(q, upgVolSize, upgChunk, 30)
	var base []time.Duration
	for range 20 {
		base = append(base, w.Round())
	}
	dirs := c.replicaDirs(vol)

	c.upgradeManagers(image2)
	c.checkUpgradeRefusals(t, vol, blk)
	c.failedUpgrade(t, w, vol)
	took, longest := c.automaticUpgrade(t, w, vol)
	for range 20 {
		longest = max(longest, w.Round())
	}
	q.Quit()
	if out := q.Output(); strings.Contains(out, "fail") || strings.Contains(out, "rror") {
		t.Fatalf("qemu-io reported errors:\n%s", out)
	}
	img := filepath.Join(t.TempDir(), "volume.raw")
	if out, err := exec.Command("nbdcopy", endpoint, img).CombinedOutput(); err != nil {
		t.Fatalf("nbdcopy: %v\n%s", err, out)
	}
	got, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, w.Expected()) {
		t.Fatalf("volume differs from the model of %d writes", len(w.Model))
	}
	c.checkUpgraded(t, vol, dirs)
	if b := c.volume(blk); b.Spec.Image != image || b.Status.CurrentImage != image {
		t.Errorf("blockdev volume moved to %s/%s: the automatic upgrade must leave it for its detach", b.Spec.Image, b.Status.CurrentImage)
	}
	slices.Sort(base)
	t.Logf("MEASURE live engine upgrade (load %s): %v from the setting change to status.currentImage; longest client round "+
		"during and after it %v (8 x 64 KiB writes + flush; median before %v); %d bytes verified", loadAvg(), took.Round(time.Millisecond),
		longest.Round(time.Millisecond), base[len(base)/2].Round(time.Millisecond), len(got))
}

// socketOf returns the unix socket path of an nbd+unix endpoint.
func socketOf(t *testing.T, endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Query().Get("socket") == "" {
		t.Fatalf("endpoint %q: no socket (%v)", endpoint, err)
	}
	return u.Query().Get("socket")
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:min(3, len(strings.Fields(string(b))))], " ")
}

// applyBlockdevVolume creates vol (16 MiB, 1 replica, blockdev) and waits
// until it is detached.
func (c *cluster) applyBlockdevVolume(t *testing.T, vol string) {
	t.Helper()
	manifest := fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: Volume\nmetadata: {name: %s, namespace: %s}\n"+
		"spec: {size: 16Mi, numberOfReplicas: 1, frontend: blockdev}\n", vol, ns)
	if out, err := c.kubectl(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply %s: %v\n%s", vol, err, out)
	}
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
}

// replicaDirs lists vol's replicas as node/dataDirectoryName, sorted.
func (c *cluster) replicaDirs(vol string) []string {
	var out []string
	for _, r := range c.replicasOf(vol) {
		out = append(out, r.Spec.NodeID+"/"+r.Spec.DataDirectoryName)
	}
	slices.Sort(out)
	return out
}

// upgradeManagers restarts the three managers as a new build running img
// and waits until an instance manager of img runs on every node beside the
// old ones.
func (c *cluster) upgradeManagers(img string) {
	c.t.Helper()
	for _, n := range c.nodes {
		c.stopManager(n)
	}
	c.image = img
	for _, n := range c.nodes {
		c.startManager(n)
	}
	c.eventually("instance managers of "+img+" running on three nodes", 120*time.Second, func() (bool, string) {
		ims, err := c.lh.LonghornV1beta2().InstanceManagers(ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		var states []string
		for _, im := range ims.Items {
			states = append(states, fmt.Sprintf("%s:%s=%s", im.Spec.NodeID, im.Spec.Image, im.Status.CurrentState))
			if im.Spec.Image == img && im.Status.CurrentState == longhorn.InstanceManagerStateRunning {
				running++
			}
		}
		return running == 3, strings.Join(states, " ")
	})
}

// patchImage sets vol's spec.image with kubectl and returns its output.
func (c *cluster) patchImage(vol, img string) (string, error) {
	return c.kubectl("", "-n", ns, "patch", "volumes.longhorn.io", vol, "--type", "merge", "-p",
		fmt.Sprintf(`{"spec":{"image":%q}}`, img))
}

// checkUpgradeRefusals: the REST engineUpgrade of the attached blockdev
// volume answers 409, and kubectl is refused for an image that is no engine
// image and while vol is degraded (a fourth replica cannot be placed on
// three nodes); vol is healthy again afterwards.
func (c *cluster) checkUpgradeRefusals(t *testing.T, vol, blk string) {
	t.Helper()
	resp, err := http.Post("http://"+c.nodes[0].ip+":9500/v1/volumes/"+blk+"?action=engineUpgrade", "application/json",
		strings.NewReader(fmt.Sprintf(`{"image":%q}`, image2)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "live upgrade is not supported yet for frontend blockdev") {
		t.Fatalf("REST engineUpgrade of an attached blockdev volume: %d %s", resp.StatusCode, body)
	}
	if out, err := c.patchImage(vol, "longhorn:no-such-build"); err == nil || !strings.Contains(out, "is not an engine image") {
		t.Fatalf("unknown image accepted: %v\n%s", err, out)
	}
	setReplicas := func(n int) {
		if out, err := c.kubectl("", "-n", ns, "patch", "volumes.longhorn.io", vol, "--type", "merge", "-p",
			fmt.Sprintf(`{"spec":{"numberOfReplicas":%d}}`, n)); err != nil {
			t.Fatalf("numberOfReplicas %d: %v\n%s", n, err, out)
		}
	}
	setReplicas(4)
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessDegraded, 60*time.Second)
	out, err := c.patchImage(vol, image2)
	if err == nil || !strings.Contains(out, "cannot do live upgrade for a unhealthy volume "+vol) {
		t.Fatalf("upgrade of a degraded volume: %v\n%s", err, out)
	}
	t.Logf("refused while degraded: %s", strings.TrimSpace(out))
	setReplicas(3)
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 60*time.Second)
}

// failedUpgrade changes vol's image while the new engine cannot start (a
// directory holds the path its nbd socket is prepared under) and writes
// until the change is rolled back: spec.image is the old image again, no
// inactive replica is left, the engine still runs in the old instance
// manager, and the volume carries a FailedEngineUpgrade event.
func (c *cluster) failedUpgrade(t *testing.T, w *testutil.ModelWriter, vol string) {
	t.Helper()
	block := filepath.Join(socketOf(t, c.hostEndpoint("n1", c.engineOf(vol).Status.Endpoint))+".upgrade", "keep")
	if err := os.MkdirAll(block, 0o755); err != nil {
		t.Fatal(err)
	}
	oldIM := c.engineOf(vol).Status.InstanceManagerName
	since := time.Now().Truncate(time.Second)
	if out, err := c.patchImage(vol, image2); err != nil {
		t.Fatalf("spec.image %s: %v\n%s", image2, err, out)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		w.Round()
		v, e := c.volume(vol), c.engineOf(vol)
		msg, evented := c.volumeEvent(vol, "FailedEngineUpgrade", since)
		inactive := 0
		for _, r := range c.replicasOf(vol) {
			if !r.Spec.Active {
				inactive++
			}
		}
		if v.Spec.Image == image && v.Status.CurrentImage == image && inactive == 0 && evented {
			t.Logf("rolled back: %s", msg)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rollback within 3 min: spec.image %s currentImage %s inactive replicas %d event %v engine %+v",
				v.Spec.Image, v.Status.CurrentImage, inactive, evented, e.Status.Conditions)
		}
	}
	if err := os.RemoveAll(filepath.Dir(block)); err != nil {
		t.Fatal(err)
	}
	if e := c.engineOf(vol); e.Status.InstanceManagerName != oldIM || e.Status.CurrentImage != image {
		t.Fatalf("after the rollback the engine runs in %s (%s), want %s", e.Status.InstanceManagerName, e.Status.CurrentImage, oldIM)
	}
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 60*time.Second)
}

// volumeEvent returns the message of the latest event reason on Volume vol
// at or after since.
func (c *cluster) volumeEvent(vol, reason string, since time.Time) (string, bool) {
	evs, err := c.kube.CoreV1().Events(ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return "", false
	}
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "Volume" && e.InvolvedObject.Name == vol && e.Reason == reason && !e.LastTimestamp.Time.Before(since) {
			return e.Message, true
		}
	}
	return "", false
}

// automaticUpgrade sets concurrent-automatic-engine-upgrade-per-node-limit
// to 1 and writes until vol runs image2: status.currentImage, three active
// replicas of image2, the engine in an instance manager of image2. It
// returns the time to status.currentImage and the longest write round.
func (c *cluster) automaticUpgrade(t *testing.T, w *testutil.ModelWriter, vol string) (time.Duration, time.Duration) {
	t.Helper()
	start := time.Now()
	if out, err := c.kubectl("", "-n", ns, "patch", "settings.longhorn.io", "concurrent-automatic-engine-upgrade-per-node-limit",
		"--type", "merge", "-p", `{"value":"1"}`); err != nil {
		t.Fatalf("setting: %v\n%s", err, out)
	}
	var took, longest time.Duration
	deadline := start.Add(3 * time.Minute)
	for {
		longest = max(longest, w.Round())
		v := c.volume(vol)
		if took == 0 && v.Status.CurrentImage == image2 {
			took = time.Since(start)
		}
		ok := v.Status.CurrentImage == image2 && v.Spec.Image == image2
		reps := c.replicasOf(vol)
		for _, r := range reps {
			ok = ok && r.Spec.Active && r.Spec.Image == image2 && r.DeletionTimestamp == nil
		}
		if ok && len(reps) == 3 {
			return took, longest
		}
		if time.Now().After(deadline) {
			t.Fatalf("not upgraded within 3 min: spec.image %s currentImage %s replicas %v", v.Spec.Image, v.Status.CurrentImage, c.replicaDirs(vol))
		}
	}
}

// checkUpgraded: vol's replicas use the data directories they used before
// (still on disk after the old replicas were deleted),
// the engine runs in an instance manager of image2, and no instance manager
// of the old image still runs vol's engine or replicas.
func (c *cluster) checkUpgraded(t *testing.T, vol string, dirs []string) {
	t.Helper()
	if got := c.replicaDirs(vol); !slices.Equal(got, dirs) {
		t.Fatalf("replica directories %v, before the upgrade %v", got, dirs)
	}
	for _, r := range c.replicasOf(vol) {
		dir := filepath.Join(c.node(r.Spec.NodeID).diskDir, "replicas", r.Spec.DataDirectoryName)
		if ents, err := os.ReadDir(dir); err != nil || len(ents) == 0 {
			t.Fatalf("data directory %s of %s after the old replica went: %v (%d entries)", dir, r.Name, err, len(ents))
		}
	}
	e := c.engineOf(vol)
	im, err := c.lh.LonghornV1beta2().InstanceManagers(ns).Get(c.ctx, e.Status.InstanceManagerName, metav1.GetOptions{})
	if err != nil || im.Spec.Image != image2 || e.Status.CurrentImage != image2 {
		t.Fatalf("engine in %s (%v), currentImage %s", e.Status.InstanceManagerName, err, e.Status.CurrentImage)
	}
	c.eventually("no instance of "+vol+" left in the old instance managers", 60*time.Second, func() (bool, string) {
		ims, err := c.lh.LonghornV1beta2().InstanceManagers(ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, im := range ims.Items {
			if im.Spec.Image != image {
				continue
			}
			for name := range im.Status.InstanceEngines {
				if strings.HasPrefix(name, vol+"-") {
					left = append(left, name)
				}
			}
			for name := range im.Status.InstanceReplicas {
				if strings.HasPrefix(name, vol+"-") {
					left = append(left, name)
				}
			}
		}
		return len(left) == 0, strings.Join(left, ",")
	})
}
