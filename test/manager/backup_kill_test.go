package manager_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// testReplicaKilledDuringBackup kills the replica process that runs a
// backup of the attached volume vol (the backup runs in that process's sync
// agent): the Backup ends in Error with a message naming the replica, the
// volume keeps serving I/O and is rebuilt back to healthy, and a retried
// Backup of the same snapshot completes and restores
// into a new volume byte for byte. The test holds the backup in its lock
// (holdBackupLock), so the kill always lands while the backup runs. The
// killed replica's lock file stays in the store, as it does in Longhorn,
// and would hold the retry until it expires (150 s without a refresh); the
// test ages it past that instead of waiting.
func testReplicaKilledDuringBackup(t *testing.T, c *cluster, vol, spec string) {
	const snap, name = "bak-snap-kill", "bak-backup-kill"
	root := filepath.Join(c.dir, "backupstore")
	ep := c.hostEndpoint("n1", c.engineOf(vol).Status.Endpoint)
	qemuIO(t, ep, "write -P 0x66 20M 2M")
	c.takeSnapshot(vol, snap)
	locks, held := c.holdBackupLock(root, vol)
	defer os.Remove(held)
	c.createBackup(name, vol, snap)
	c.waitLockFiles("backup "+name+" waits for its lock behind the test's", locks, 2)
	addr := c.backupReplica(t, name)
	replica, pid := c.replicaProcess(t, vol, addr)
	c.must(syscall.Kill(pid, syscall.SIGKILL))
	start := time.Now()
	var msg string
	c.eventually("backup "+name+" fails after its replica is killed", 90*time.Second, func() (bool, string) {
		b, err := c.lh.LonghornV1beta2().Backups(ns).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if b.Status.State == longhorn.BackupStateCompleted {
			t.Fatalf("backup %s completed after its replica %s was killed", name, replica)
		}
		msg = b.Status.Error
		return b.Status.State == longhorn.BackupStateError && strings.Contains(msg, addr), fmt.Sprintf("%s %q", b.Status.State, msg)
	})
	t.Logf("MEASURE backup failed %v after its replica %s was killed: %s", time.Since(start).Round(time.Millisecond), replica, msg)
	qemuIO(t, ep, "read -P 0x66 20M 2M", "read -P 0x11 0 6M")
	start = time.Now()
	c.waitRebuiltAfterKill(vol, pid)
	t.Logf("MEASURE killed replica rebuilt, volume healthy again %v after the failed backup", time.Since(start).Round(time.Millisecond))

	c.must(os.Remove(held))
	c.ageLocks(t, locks)
	retry := c.waitBackup(t, name+"-retry", vol, snap)
	t.Logf("retry ran on %s (the killed replica was at %s)", retry.Status.ReplicaAddress, addr)
	c.restoreAndCompare(t, "bak-kill-restored", spec, retry.Status.URL, ep)
	for _, b := range []string{name, name + "-retry"} {
		c.must(c.lh.LonghornV1beta2().Backups(ns).Delete(c.ctx, b, metav1.DeleteOptions{}))
		c.waitBackupGone(b)
	}
}

// waitRebuiltAfterKill waits until vol is healthy again after its replica
// process killed was killed: three replicas RW in the engine, each with one
// running process, none of them the killed one (rebuilt, or replaced by a
// new replica).
func (c *cluster) waitRebuiltAfterKill(vol string, killed int) {
	c.t.Helper()
	c.eventually("volume "+vol+" rebuilt to healthy after the kill", 180*time.Second, func() (bool, string) {
		v, e := c.volume(vol), c.engineOf(vol)
		if v == nil || e == nil {
			return false, "no volume or engine"
		}
		rw := 0
		for _, r := range c.replicasOf(vol) {
			p := c.pids("engine replica", r.Spec.DataDirectoryName)
			if len(p) == 1 && p[0] != killed && e.Status.ReplicaModeMap[r.Name] == longhorn.ReplicaModeRW {
				rw++
			}
		}
		return v.Status.Robustness == longhorn.VolumeRobustnessHealthy && rw == 3 && len(e.Status.ReplicaModeMap) == 3,
			fmt.Sprintf("robustness=%s modes=%v rw with a new process=%d", v.Status.Robustness, e.Status.ReplicaModeMap, rw)
	})
}

// backupReplica waits until Backup name is InProgress on a replica and
// returns that replica's address.
func (c *cluster) backupReplica(t *testing.T, name string) string {
	t.Helper()
	var addr string
	c.eventually("backup "+name+" in progress on a replica", 30*time.Second, func() (bool, string) {
		b, err := c.lh.LonghornV1beta2().Backups(ns).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		addr = b.Status.ReplicaAddress
		return b.Status.State == longhorn.BackupStateInProgress && addr != "", fmt.Sprintf("%s on %q", b.Status.State, addr)
	})
	return strings.TrimPrefix(addr, "tcp://")
}

// replicaProcess returns the name and process of vol's replica whose data
// server is at addr (the engine's replica address map).
func (c *cluster) replicaProcess(t *testing.T, vol, addr string) (string, int) {
	t.Helper()
	e := c.engineOf(vol)
	if e == nil {
		t.Fatalf("volume %s has no engine", vol)
	}
	for _, r := range c.replicasOf(vol) {
		if strings.TrimPrefix(e.Spec.ReplicaAddressMap[r.Name], "tcp://") != addr {
			continue
		}
		ps := c.pids("engine replica", r.Spec.DataDirectoryName)
		if len(ps) != 1 {
			t.Fatalf("replica %s at %s: processes %v", r.Name, addr, ps)
		}
		return r.Name, ps[0]
	}
	t.Fatalf("no replica of %s at %s (engine map %v)", vol, addr, e.Spec.ReplicaAddressMap)
	return "", 0
}

// ageLocks sets the modification time of every lock file under locks to
// more than Longhorn's lock duration (150 s) ago: what 150 s without a
// refresh by their (dead) owner would do.
func (c *cluster) ageLocks(t *testing.T, locks string) {
	t.Helper()
	entries, err := os.ReadDir(locks)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-151 * time.Second)
	for _, e := range entries {
		c.must(os.Chtimes(filepath.Join(locks, e.Name()), old, old))
	}
}

// waitBackup creates Backup name of snapshot snap of vol and waits until it
// is Completed.
func (c *cluster) waitBackup(t *testing.T, name, vol, snap string) *longhorn.Backup {
	t.Helper()
	c.createBackup(name, vol, snap)
	start := time.Now()
	var b *longhorn.Backup
	c.eventually("backup "+name+" completed", 2*time.Minute, func() (bool, string) {
		var err error
		if b, err = c.lh.LonghornV1beta2().Backups(ns).Get(c.ctx, name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		if b.Status.State == longhorn.BackupStateError {
			t.Fatalf("backup %s failed: %s", name, b.Status.Error)
		}
		return b.Status.State == longhorn.BackupStateCompleted && b.Status.URL != "", fmt.Sprintf("%s %d%%", b.Status.State, b.Status.Progress)
	})
	t.Logf("MEASURE backup %s: %v (newly uploaded %s bytes)", name, time.Since(start).Round(time.Millisecond), b.Status.NewlyUploadedDataSize)
	return b
}

// restoreAndCompare restores backupURL into a new volume name (spec plus
// fromBackup), attaches it on n2 and compares all its bytes with the
// device srcEP; then it detaches and deletes the new volume.
func (c *cluster) restoreAndCompare(t *testing.T, name, spec, backupURL, srcEP string) {
	t.Helper()
	if out, err := c.kubectl(volumeYAML(name, spec+fmt.Sprintf(", fromBackup: %q", backupURL)), "apply", "-f", "-"); err != nil {
		t.Fatalf("restore volume %s: %v\n%s", name, err, out)
	}
	c.waitRestored(t, name, 3*time.Minute)
	c.attach(name, "n2")
	c.waitState(name, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	got, want := deviceSum(t, c.hostEndpoint("n2", c.engineOf(name).Status.Endpoint)), deviceSum(t, srcEP)
	if !bytes.Equal(got, want) {
		t.Fatalf("volume %s restored from %s differs from the source (sha256 %x, source %x)", name, backupURL, got, want)
	}
	t.Logf("restored %s matches the source byte for byte (sha256 %x)", name, got[:8])
	c.attach(name, "")
	c.waitState(name, longhorn.VolumeStateDetached, "", 60*time.Second)
	if out, err := c.kubectl("", "-n", ns, "delete", "volumes.longhorn.io", name, "--wait=false"); err != nil {
		t.Fatalf("delete %s: %v\n%s", name, err, out)
	}
}

// deviceSum returns the SHA-256 of every byte of the block device at path.
func deviceSum(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return h.Sum(nil)
}
