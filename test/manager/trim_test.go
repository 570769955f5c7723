package manager_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// testFilesystemTrim: a 2-replica blockdev volume attached on n1 holds an
// ext4 mounted from its device (node n1's /dev/longhorn/<volume>) with a
// 24 MiB file; deleting the file frees nothing in the replicas; a
// RecurringJob with task filesystem-trim, run as its CronJob runs it
// (`longhorn recurring-job`, which calls the volume's trimFilesystem on the
// manager), makes the filesystem discard the file's blocks: the UNMAPs reach
// both replicas, whose allocated size drops by about the file's size.
func testFilesystemTrim(t *testing.T, c *cluster) {
	for _, tool := range []string{"mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s: %v", tool, err)
		}
	}
	const vol, job = "trim-vol", "trim-job"
	if out, err := c.kubectl(volumeYAML(vol, `size: "67108864", numberOfReplicas: 2, frontend: blockdev`), "apply", "-f", "-"); err != nil {
		t.Fatalf("volume %s: %v\n%s", vol, err, out)
	}
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	c.attach(vol, "n1")
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	dev := c.hostEndpoint("n1", c.engineOf(vol).Status.Endpoint)
	if out, err := exec.Command("mkfs.ext4", "-q", "-E", "nodiscard", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v\n%s", dev, err, out)
	}
	mnt := filepath.Join(c.dir, "trim-mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		t.Fatalf("mount %s: %v", dev, err)
	}
	defer func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) }()
	data := make([]byte, 24<<20)
	_, _ = rand.Read(data)
	if err := os.WriteFile(filepath.Join(mnt, "data"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	syncFS(t, mnt)
	full := c.replicaAllocations(t, vol)
	if err := os.Remove(filepath.Join(mnt, "data")); err != nil {
		t.Fatal(err)
	}
	syncFS(t, mnt)
	deleted := c.replicaAllocations(t, vol)
	out, err := c.kubectl(fmt.Sprintf(`apiVersion: longhorn.io/v1beta2
kind: RecurringJob
metadata: {name: %s, namespace: %s}
spec: {task: filesystem-trim, cron: "0 3 * * *", retain: 2, concurrency: 1, groups: []}
`, job, ns), "apply", "-f", "-")
	if err != nil {
		t.Fatalf("recurring job %s: %v\n%s", job, err, out)
	}
	if j, err := c.lh.LonghornV1beta2().RecurringJobs(ns).Get(c.ctx, job, metav1.GetOptions{}); err != nil || j.Spec.Retain != 0 {
		t.Fatalf("recurring job %s: retain %v (%v), want 0 (a trim keeps nothing)", job, j, err)
	}
	if out, err := c.kubectl("", "-n", ns, "label", "volumes.longhorn.io", vol, "recurring-job.longhorn.io/"+job+"=enabled"); err != nil {
		t.Fatalf("label: %v\n%s", err, out)
	}
	start := time.Now()
	cmd := exec.Command(c.binary, "recurring-job", "--kubeconfig", env.KubeconfigPath, "--namespace", ns, "--timeout", "3m",
		"--manager-url", "http://"+c.node("n1").ip+":9500/v1", job)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("recurring-job %s: %v\n%s", job, err, out)
	}
	took := time.Since(start)
	trimmed := c.replicaAllocations(t, vol)
	t.Logf("MEASURE filesystem-trim job on a 64 MiB ext4 with a deleted 24 MiB file: %v; replica allocations (bytes) written %v, file deleted %v, trimmed %v",
		took.Round(time.Millisecond), full, deleted, trimmed)
	for dir, before := range deleted {
		if full[dir]-before > 4<<20 {
			t.Errorf("replica %s: deleting the file freed %d bytes before the trim; want none (mounted without discard)", dir, full[dir]-before)
		}
		if drop := before - trimmed[dir]; drop < 20<<20 {
			t.Errorf("replica %s: the trim freed %d bytes (%d -> %d), want about the deleted 24 MiB", dir, drop, before, trimmed[dir])
		}
	}
	if err := unix.Unmount(mnt, 0); err != nil {
		t.Fatalf("unmount %s: %v", mnt, err)
	}
	c.attach(vol, "")
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	for _, obj := range []string{"recurringjobs.longhorn.io/" + job, "volumes.longhorn.io/" + vol} {
		if out, err := c.kubectl("", "-n", ns, "delete", obj, "--wait=false"); err != nil {
			t.Fatalf("delete %s: %v\n%s", obj, err, out)
		}
	}
	c.eventually("volume "+vol+" gone", 60*time.Second, func() (bool, string) {
		return c.volume(vol) == nil && len(c.replicasOf(vol)) == 0, fmt.Sprintf("replicas=%d", len(c.replicasOf(vol)))
	})
}

// replicaAllocations returns the bytes allocated on disk by each replica
// of vol (its data directory's layer files).
func (c *cluster) replicaAllocations(t *testing.T, vol string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, r := range c.replicasOf(vol) {
		dir := filepath.Join(r.Spec.DiskPath, "replicas", r.Spec.DataDirectoryName)
		files, err := filepath.Glob(filepath.Join(dir, "*.img"))
		if err != nil || len(files) == 0 {
			t.Fatalf("replica %s of %s: no layer files in %s (%v)", r.Name, vol, dir, err)
		}
		for _, f := range files {
			var st unix.Stat_t
			if err := unix.Stat(f, &st); err != nil {
				t.Fatal(err)
			}
			out[r.Spec.DataDirectoryName] += st.Blocks * 512
		}
	}
	if len(out) != 2 {
		t.Fatalf("volume %s has %d replica directories, want 2: %v", vol, len(out), out)
	}
	return out
}

// syncFS writes back the filesystem mounted at dir (syncfs(2)).
func syncFS(t *testing.T, dir string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		t.Fatalf("syncfs %s: %v", dir, err)
	}
}
