package manager_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// orphanScanTimeout covers a node controller's disk scan (every 30 s).
const orphanScanTimeout = 75 * time.Second

// testOrphanReplicaData: two replica directories that no Replica owns are
// made on n2's disk, next to the attached volume's replica. Each becomes
// an Orphan (type replica-data, node n2, its directory and disk in the
// parameters); the volume's own replica directory does not. Deleting one
// Orphan removes its directory; with orphan-resource-auto-deletion
// replica-data and a grace period of 0 the other is deleted by the system,
// its directory too. The volume's replica directory stays.
func testOrphanReplicaData(t *testing.T, c *cluster, vol string) {
	n := c.node("n2")
	replicas := filepath.Join(n.diskDir, "replicas")
	byUser, byAuto := "orphan-by-user-1a2b3c4d", "orphan-by-auto-5e6f7a8b"
	for _, d := range []string{byUser, byAuto} {
		c.must(os.MkdirAll(filepath.Join(replicas, d), 0o755))
		c.must(os.WriteFile(filepath.Join(replicas, d, "volume.meta"), []byte(`{"Size":4096}`), 0o644))
	}
	own := ""
	for _, r := range c.replicasOf(vol) {
		if r.Spec.NodeID == "n2" {
			own = r.Spec.DataDirectoryName
		}
	}
	if own == "" {
		t.Fatalf("%s has no replica on n2", vol)
	}
	orphans := map[string]longhorn.Orphan{}
	c.eventually("orphans of both directories on n2", orphanScanTimeout, func() (bool, string) {
		orphans = c.orphansOn("n2")
		_, u := orphans[byUser]
		_, a := orphans[byAuto]
		return u && a, fmt.Sprintf("%d orphans on n2", len(orphans))
	})
	if o, ok := orphans[own]; ok {
		t.Fatalf("the replica directory %s of %s is orphan %s", own, vol, o.Name)
	}
	for d, o := range orphans {
		p := o.Spec.Parameters
		if o.Spec.Type != longhorn.OrphanTypeReplicaData || p[longhorn.OrphanDiskPath] != n.diskDir || p[longhorn.OrphanDiskName] != "disk-1" {
			t.Fatalf("orphan %s of %s: type %s, parameters %v", o.Name, d, o.Spec.Type, p)
		}
	}

	start := time.Now()
	c.must(c.lh.LonghornV1beta2().Orphans(ns).Delete(c.ctx, orphans[byUser].Name, metav1.DeleteOptions{}))
	c.waitOrphanGone(orphans[byUser].Name, filepath.Join(replicas, byUser))
	t.Logf("MEASURE orphan deleted -> its directory removed: %v", time.Since(start).Round(time.Millisecond))

	old := c.settingValue(t, "orphan-resource-auto-deletion")
	oldGrace := c.settingValue(t, "orphan-resource-auto-deletion-grace-period")
	defer setSetting(t, c, "orphan-resource-auto-deletion", old)
	defer setSetting(t, c, "orphan-resource-auto-deletion-grace-period", oldGrace)
	setSetting(t, c, "orphan-resource-auto-deletion-grace-period", "0")
	start = time.Now()
	setSetting(t, c, "orphan-resource-auto-deletion", "replica-data")
	c.waitOrphanGone(orphans[byAuto].Name, filepath.Join(replicas, byAuto))
	t.Logf("MEASURE orphan-resource-auto-deletion=replica-data -> orphan and directory gone: %v", time.Since(start).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(replicas, own)); err != nil {
		t.Fatalf("the volume's replica directory: %v", err)
	}
}

// orphansOn returns node's Orphans by data directory name.
func (c *cluster) orphansOn(node string) map[string]longhorn.Orphan {
	out := map[string]longhorn.Orphan{}
	list, err := c.lh.LonghornV1beta2().Orphans(ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return out
	}
	for _, o := range list.Items {
		if o.Spec.NodeID == node {
			out[o.Spec.Parameters[longhorn.OrphanDataName]] = o
		}
	}
	return out
}

// waitOrphanGone waits until the Orphan object and its directory are gone.
func (c *cluster) waitOrphanGone(name, dir string) {
	c.t.Helper()
	c.eventually("orphan "+name+" and "+dir+" gone", 30*time.Second, func() (bool, string) {
		_, err := c.lh.LonghornV1beta2().Orphans(ns).Get(c.ctx, name, metav1.GetOptions{})
		_, serr := os.Stat(dir)
		return apierrors.IsNotFound(err) && os.IsNotExist(serr), fmt.Sprintf("orphan: %v; directory: %v", err, serr)
	})
}

// settingValue returns the Longhorn setting's value.
func (c *cluster) settingValue(t *testing.T, name string) string {
	s, err := c.lh.LonghornV1beta2().Settings(ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Value
}
