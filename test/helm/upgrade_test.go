package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/internal/testutil"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
	"github.com/longhorn-go/longhorn/types"
)

// Volumes of the upgrade test: three 2-replica nbd volumes of upgSize,
// written in chunks of upgChunk.
const (
	upgVolumes = 3
	upgSize    = 64 << 20
	upgChunk   = 64 << 10
)

// upgWriter is one attached volume with its qemu-io client and the model
// of every write acknowledged to it.
type upgWriter struct {
	vol, node string
	q         *testutil.QemuShell
	w         *testutil.ModelWriter
}

// TestHelmUpgradeLiveEngines is issue 20's upgrade with workloads running,
// on a real-node cluster of its own: helm installs version N (the image of
// LONGHORN_IMAGE_ARCHIVE), three volumes are attached with a qemu-io client
// each writing rounds of 8 x 64 KiB (reconnect-delay 20 s) the whole time,
// helm upgrades to N+1 (the same source built with another version,
// LONGHORN_NEXT_IMAGE_ARCHIVE, tag LONGHORN_NEXT_IMAGE_TAG): the managers
// roll while the old instance managers keep serving; each volume's engine
// is then upgraded live (spec.image, as the engineUpgrade action sets it);
// the old instance managers go once their last instance moved. No client
// sees an error and every byte of each volume equals the model of its
// writes. Before the engines move, a fourth volume's upgrade is refused
// while it is degraded and while a replica rebuilds.
func TestHelmUpgradeLiveEngines(t *testing.T) {
	c, helmBin, err := prerequisites()
	next, nextTag := os.Getenv("LONGHORN_NEXT_IMAGE_ARCHIVE"), os.Getenv("LONGHORN_NEXT_IMAGE_TAG")
	if err == nil && (next == "" || nextTag == "") {
		err = fmt.Errorf("LONGHORN_NEXT_IMAGE_ARCHIVE and LONGHORN_NEXT_IMAGE_TAG are not set (make test-helm builds image N+1)")
	}
	if err != nil {
		if testutil.ToolsRequired() && os.Getenv("LONGHORN_HELM_E2E") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	testutil.RequireTool(t, "qemu-io")
	c.ImageArchives = append(c.ImageArchives, next)
	lock(t)
	logf := func(format string, args ...any) { t.Logf(format, args...) }
	if err := cluster.Down(c, logf); err != nil {
		t.Fatalf("removing a leftover cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Down(c, logf); err != nil {
			t.Errorf("cluster down: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if _, err := cluster.Up(ctx, c, logf); err != nil {
		t.Fatalf("cluster up: %v", err)
	}
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	root := repoRoot()
	rel := cluster.HelmRelease{Helm: helmBin, Chart: filepath.Join(root, "chart"), Timeout: 5 * time.Minute,
		ValuesFiles: []string{filepath.Join(root, "hack", "cluster", "values.yaml")}}
	if err := cluster.HelmInstall(ctx, &c, rel, logf); err != nil {
		dumpPods(ctx, t, cs)
		t.Fatal(err)
	}
	f, err := framework.Connect(ctx, c.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	f.Log = t.Logf
	u := &upgradeRun{t: t, ctx: ctx, f: f, c: &c}
	imgs, err := u.waitIMImages(nil)
	u.must(err)
	oldImage := imgs[0]
	ws := u.startWriters()
	u.createRefusalVolume()

	// helm upgrade to N+1 while the clients write.
	rel.Set = []string{"image.longhorn.tag=" + nextTag}
	t0 := time.Now()
	u.whileWriting(ws, "helm upgrade", func() error { return cluster.HelmInstall(ctx, &c, rel, logf) })
	var newImage string
	u.whileWriting(ws, "instance managers of N+1", func() error {
		imgs, err := u.waitIMImages([]string{oldImage})
		newImage = imgs[len(imgs)-1]
		return err
	})
	t.Logf("MEASURE helm upgrade to %s: %.1fs until the new instance managers ran beside the old ones", newImage, time.Since(t0).Seconds())
	checkUpgradeHooks(ctx, t, cs, &c)
	for _, w := range ws {
		u.checkEngine(w.vol, oldImage)
	}
	u.whileWriting(ws, "upgrade refusals", func() error { return u.checkRefusals(newImage) })

	// Each engine moves live to N+1.
	var lastMoved time.Time
	for _, w := range ws {
		t1 := time.Now()
		u.must(u.setImage(w.vol, newImage))
		rounds, longest := u.whileWriting(ws, "engine upgrade of "+w.vol, func() error { return u.waitUpgraded(w.vol, newImage) })
		lastMoved = time.Now()
		t.Logf("MEASURE live engine upgrade of %s: %.1fs (load %s); %d client rounds meanwhile, longest %v",
			w.vol, lastMoved.Sub(t1).Seconds(), loadAvg(), rounds, longest.Round(time.Millisecond))
	}
	u.whileWriting(ws, "old instance managers gone", func() error { return u.waitIMsGone(oldImage) })
	t.Logf("MEASURE old instance managers and their pods gone %.1fs after the last engine moved", time.Since(lastMoved).Seconds())
	u.verify(ws)
}

// upgradeRun is the state of TestHelmUpgradeLiveEngines.
type upgradeRun struct {
	t   *testing.T
	ctx context.Context
	f   *framework.Cluster
	c   *cluster.Config
}

func (u *upgradeRun) must(err error) {
	u.t.Helper()
	if err != nil {
		u.t.Fatal(err)
	}
}

// startWriters creates the volumes, attaches them round-robin on the nodes
// and starts a qemu-io client inside each volume's node, on the engine's
// nbd socket (the node's /var/run/longhorn/nbd, which every instance-manager
// pod mounts: the socket a new engine takes over).
func (u *upgradeRun) startWriters() []*upgWriter {
	u.t.Helper()
	var ws []*upgWriter
	for i := range upgVolumes {
		w := &upgWriter{vol: fmt.Sprintf("upg-%d", i), node: u.c.NodeName(1 + i%u.c.Nodes)}
		_, err := u.f.CreateVolume(u.ctx, framework.NewVolume(w.vol, upgSize, 2, longhorn.VolumeFrontendNBD))
		u.must(err)
		_, err = u.f.WaitVolume(u.ctx, w.vol, 2*time.Minute, framework.All(framework.StateIs(longhorn.VolumeStateDetached), framework.Scheduled()))
		u.must(err)
		ep, err := u.f.Attach(u.ctx, w.vol, w.node, "upgrade", longhorn.VolumeFrontendNBD, 2*time.Minute)
		u.must(err)
		target, err := framework.ParseEndpoint(ep.Status)
		u.must(err)
		cmd, err := u.f.NodeCommand(context.WithoutCancel(u.ctx), w.node, append([]string{"qemu-io"}, testutil.QemuShellArgs(target.Socket, target.Export)...)...)
		u.must(err)
		w.q = testutil.StartQemuShellCmd(u.t, cmd)
		w.w = testutil.NewModelWriter(w.q, upgSize, upgChunk, int64(40+i))
		for range 5 {
			w.w.Round()
		}
		ws = append(ws, w)
	}
	_, err := u.f.WaitVolume(u.ctx, ws[0].vol, 2*time.Minute, framework.RobustnessIs(longhorn.VolumeRobustnessHealthy))
	u.must(err)
	return ws
}

// whileWriting runs op in the background and write rounds on every client
// until op returns; op's error fails the test. It returns the rounds of
// each client and the longest one.
func (u *upgradeRun) whileWriting(ws []*upgWriter, what string, op func() error) (int, time.Duration) {
	u.t.Helper()
	done := make(chan error, 1)
	go func() { done <- op() }()
	rounds, longest := 0, time.Duration(0)
	for {
		select {
		case err := <-done:
			if err != nil {
				u.t.Fatalf("%s: %v", what, err)
			}
			return rounds, longest
		default:
		}
		for _, w := range ws {
			longest = max(longest, w.w.Round())
		}
		rounds++
	}
}

// waitIMImages waits until an instance manager of an image not in known
// runs on every node, beside running instance managers of every image in
// known, and returns the images of the running instance managers, the
// known ones first.
func (u *upgradeRun) waitIMImages(known []string) ([]string, error) {
	var out []string
	err := u.poll("instance managers", 4*time.Minute, func() (bool, string) {
		ims, err := u.f.LH.LonghornV1beta2().InstanceManagers(framework.Namespace).List(u.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		perImage := map[string]int{}
		var states []string
		for _, im := range ims.Items {
			states = append(states, im.Spec.NodeID+":"+im.Spec.Image+"="+string(im.Status.CurrentState))
			if im.Status.CurrentState == longhorn.InstanceManagerStateRunning {
				perImage[im.Spec.Image]++
			}
		}
		out = append([]string(nil), known...)
		for img, n := range perImage {
			if n != u.c.Nodes {
				return false, strings.Join(states, " ")
			}
			if !slices.Contains(known, img) {
				out = append(out, img)
			}
		}
		return len(out) == len(known)+1 && len(perImage) == len(out), strings.Join(states, " ")
	})
	return out, err
}

// checkEngine: vol's engine runs image img in an instance manager of img.
func (u *upgradeRun) checkEngine(vol, img string) {
	u.t.Helper()
	if why := u.engineOn(vol, img); why != "" {
		u.t.Fatalf("%s: %s", vol, why)
	}
}

// engineOn returns why vol's engine does not run image img in an instance
// manager of img with a healthy volume ("" when it does).
func (u *upgradeRun) engineOn(vol, img string) string {
	v, err := u.f.Volume(u.ctx, vol)
	if err != nil {
		return err.Error()
	}
	if v.Status.CurrentImage != img || v.Status.Robustness != longhorn.VolumeRobustnessHealthy {
		return fmt.Sprintf("volume currentImage %s robustness %s", v.Status.CurrentImage, v.Status.Robustness)
	}
	es, err := u.f.LH.LonghornV1beta2().Engines(framework.Namespace).List(u.ctx, metav1.ListOptions{LabelSelector: types.LonghornLabelVolume + "=" + vol})
	if err != nil || len(es.Items) != 1 {
		return fmt.Sprintf("engines: %v (%d)", err, len(es.Items))
	}
	e := es.Items[0]
	if e.Status.CurrentImage != img || e.Status.CurrentState != longhorn.InstanceStateRunning || len(e.Spec.UpgradedReplicaAddressMap) > 0 {
		return fmt.Sprintf("engine %s currentImage %s state %s upgradedReplicaAddressMap %v", e.Name, e.Status.CurrentImage, e.Status.CurrentState, e.Spec.UpgradedReplicaAddressMap)
	}
	im, err := u.f.LH.LonghornV1beta2().InstanceManagers(framework.Namespace).Get(u.ctx, e.Status.InstanceManagerName, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	if im.Spec.Image != img {
		return fmt.Sprintf("engine %s runs in instance manager %s of %s", e.Name, im.Name, im.Spec.Image)
	}
	return ""
}

// setImage sets vol's spec.image (what the REST engineUpgrade action does).
func (u *upgradeRun) setImage(vol, img string) error {
	out, err := u.f.Kubectl(u.ctx, "-n", framework.Namespace, "patch", "volumes.longhorn.io", vol, "--type", "merge",
		"-p", fmt.Sprintf(`{"spec":{"image":%q}}`, img))
	if err != nil {
		return fmt.Errorf("spec.image of %s: %w\n%s", vol, err, out)
	}
	return nil
}

// waitUpgraded waits until vol runs img live (engineOn).
func (u *upgradeRun) waitUpgraded(vol, img string) error {
	return u.poll("engine of "+vol+" on "+img, 3*time.Minute, func() (bool, string) {
		why := u.engineOn(vol, img)
		return why == "", why
	})
}

// waitIMsGone waits until no InstanceManager of img and no pod of one is left.
func (u *upgradeRun) waitIMsGone(img string) error {
	return u.poll("instance managers of "+img+" gone", 3*time.Minute, func() (bool, string) {
		ims, err := u.f.LH.LonghornV1beta2().InstanceManagers(framework.Namespace).List(u.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		pods, err := u.f.Kube.CoreV1().Pods(framework.Namespace).List(u.ctx, metav1.ListOptions{LabelSelector: "longhorn.io/component=instance-manager"})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, im := range ims.Items {
			if im.Spec.Image == img {
				left = append(left, fmt.Sprintf("InstanceManager %s (%s, %d engines, %d replicas)", im.Name, im.Status.CurrentState,
					len(im.Status.InstanceEngines), len(im.Status.InstanceReplicas)))
			}
		}
		for _, p := range pods.Items {
			if len(p.Spec.Containers) > 0 && p.Spec.Containers[0].Image == img {
				left = append(left, "pod "+p.Name)
			}
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
}

// verify writes a last few rounds, ends the clients (no error printed,
// clean exit) and reads every byte of each volume back through its new
// engine: the SHA-256 equals the model's.
func (u *upgradeRun) verify(ws []*upgWriter) {
	u.t.Helper()
	var bytes int64
	for _, w := range ws {
		for range 3 {
			w.w.Round()
		}
		w.q.Quit()
		if out := w.q.Output(); strings.Contains(out, "fail") || strings.Contains(out, "rror") {
			u.t.Fatalf("%s: qemu-io reported errors:\n%s", w.vol, out)
		}
		ep, err := u.f.Endpoint(u.ctx, w.vol)
		u.must(err)
		got, err := u.f.ReadSHA256(u.ctx, ep, 0, upgSize)
		u.must(err)
		sum := sha256.Sum256(w.w.Expected())
		if want := hex.EncodeToString(sum[:]); got != want {
			u.t.Fatalf("%s: sha256 %s of the volume, want %s (the model of %d chunks)", w.vol, got, want, len(w.w.Model))
		}
		bytes += upgSize
	}
	u.t.Logf("MEASURE %d volumes: 0 I/O errors, %d bytes read back equal to the model of every acknowledged write", len(ws), bytes)
}

// poll calls cond every 500 ms until it holds or timeout passes.
func (u *upgradeRun) poll(what string, timeout time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) || u.ctx.Err() != nil {
			return fmt.Errorf("%s: not reached in %v (last: %s)", what, timeout, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
