package api_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	lh "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/testbed/testenv"
)

// The CRD schemas reject values outside Longhorn's enums and ranges, naming
// the field, and enforce the immutable fields.
func TestSchemaRejectsBadValues(t *testing.T) {
	c := clients(t).LonghornV1beta2()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	vol := func(name string, mut func(*lh.VolumeSpec)) *lh.Volume {
		v := &lh.Volume{ObjectMeta: om(name), Spec: lh.VolumeSpec{Size: 1 << 30, NumberOfReplicas: 3}}
		mut(&v.Spec)
		return v
	}
	bad := []struct {
		field  string
		create func() error
	}{
		{"spec.frontend", func() error {
			_, err := c.Volumes(ns).Create(ctx, vol("bad-frontend", func(s *lh.VolumeSpec) { s.Frontend = "floppy" }), metav1.CreateOptions{})
			return err
		}},
		{"spec.accessMode", func() error {
			_, err := c.Volumes(ns).Create(ctx, vol("bad-access", func(s *lh.VolumeSpec) { s.AccessMode = "rwz" }), metav1.CreateOptions{})
			return err
		}},
		{"spec.dataEngine", func() error {
			_, err := c.Volumes(ns).Create(ctx, vol("bad-engine", func(s *lh.VolumeSpec) { s.DataEngine = "v3" }), metav1.CreateOptions{})
			return err
		}},
		{"spec.backupBlockSize", func() error {
			_, err := c.Volumes(ns).Create(ctx, vol("bad-block", func(s *lh.VolumeSpec) { s.BackupBlockSize = 4096 }), metav1.CreateOptions{})
			return err
		}},
		{"spec.rebuildConcurrentSyncLimit", func() error {
			_, err := c.Volumes(ns).Create(ctx, vol("bad-sync", func(s *lh.VolumeSpec) { s.RebuildConcurrentSyncLimit = 6 }), metav1.CreateOptions{})
			return err
		}},
		{"spec.task", func() error {
			_, err := c.RecurringJobs(ns).Create(ctx, &lh.RecurringJob{ObjectMeta: om("bad-task"), Spec: lh.RecurringJobSpec{Task: "defragment", Cron: "* * * * *"}}, metav1.CreateOptions{})
			return err
		}},
		{"spec.image", func() error {
			_, err := c.EngineImages(ns).Create(ctx, &lh.EngineImage{ObjectMeta: om("bad-ei")}, metav1.CreateOptions{})
			return err
		}},
		{"diskType", func() error {
			_, err := c.Nodes(ns).Create(ctx, &lh.Node{ObjectMeta: om("bad-node"), Spec: lh.NodeSpec{Disks: map[string]lh.DiskSpec{"d": {Type: "tape"}}}}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, b := range bad {
		err := b.create()
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), b.field) {
			t.Errorf("%s: got %v, want an Invalid error naming the field", b.field, err)
		}
	}

	// encrypted is immutable once set.
	v, err := c.Volumes(ns).Create(ctx, vol("immutable", func(s *lh.VolumeSpec) { s.Encrypted = true }), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v.Spec.Encrypted = false
	if _, err := c.Volumes(ns).Update(ctx, v, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Encrypted is immutable") {
		t.Errorf("changing encrypted: %v, want Invalid 'Encrypted is immutable'", err)
	}
}

// kubectl knows every short name and prints Longhorn's Volume columns.
func TestKubectl(t *testing.T) {
	c := clients(t).LonghornV1beta2()
	out := kubectl(t, "api-resources", "--api-group=longhorn.io", "--no-headers")
	for _, short := range []string{"lhv", "lhe", "lhr", "lhn", "lhim", "lhs", "lhei", "lhsnap", "lhb", "lhbt", "lhbv",
		"lhrj", "lhva", "lho", "lhsm", "lhsb", "lhsr", "lhbi", "lhbim", "lhbids", "lhbundle", "lhbbi"} {
		if !containsField(out, short) {
			t.Errorf("kubectl api-resources lacks short name %s:\n%s", short, out)
		}
	}
	if n := len(strings.Split(strings.TrimSpace(out), "\n")); n != 22 {
		t.Errorf("longhorn.io has %d resources, want 22:\n%s", n, out)
	}

	kubectl(t, "apply", "-f", filepath.Join(testenv.RepoRoot(), "examples", "volume.yaml"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := c.Volumes(ns).Get(ctx, "example-volume", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Spec.Size != 1<<30 || v.Spec.NumberOfReplicas != 3 || v.Spec.Frontend != lh.VolumeFrontendBlockDev {
		t.Fatalf("applied example: %+v", v.Spec)
	}
	v.Status.State, v.Status.Robustness, v.Status.CurrentNodeID = lh.VolumeStateAttached, lh.VolumeRobustnessHealthy, "node-1"
	v.Status.Conditions = lh.SetCondition(nil, lh.VolumeConditionTypeScheduled, lh.ConditionStatusTrue, "", "", "2026-01-01T00:00:00Z")
	if _, err := c.Volumes(ns).UpdateStatus(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	table := kubectl(t, "get", "lhv", "example-volume", "-n", ns)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get lhv:\n%s", table)
	}
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	wantHeader := []string{"NAME", "DATA", "ENGINE", "STATE", "ROBUSTNESS", "SCHEDULED", "SIZE", "NODE", "AGE"}
	if strings.Join(header, " ") != strings.Join(wantHeader, " ") {
		t.Errorf("header %q, want %q", lines[0], strings.Join(wantHeader, " "))
	}
	wantRow := []string{"example-volume", "v1", "attached", "healthy", "True", "1073741824", "node-1"}
	if len(row) != len(wantRow)+1 || strings.Join(row[:len(wantRow)], " ") != strings.Join(wantRow, " ") {
		t.Errorf("row %q, want %q <age>", lines[1], strings.Join(wantRow, " "))
	}
	// Applying the unchanged manifest again is a no-op, not an error.
	if out := kubectl(t, "apply", "-f", filepath.Join(testenv.RepoRoot(), "examples", "volume.yaml")); !strings.Contains(out, "unchanged") {
		t.Errorf("re-apply: %s", out)
	}
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := env.KubectlCmd(args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func containsField(text, field string) bool {
	for _, line := range strings.Split(text, "\n") {
		for _, f := range strings.Fields(line) {
			for _, part := range strings.Split(f, ",") {
				if part == field {
					return true
				}
			}
		}
	}
	return false
}
