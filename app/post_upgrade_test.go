package app

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/fake"
)

// pre-upgrade records the installed version, the new managers pin theirs,
// post-upgrade migrates from the recorded one and clears the record.
func TestPreThenPostUpgrade(t *testing.T) {
	ctx := context.Background()
	const ns = "longhorn-system"
	cases := []struct {
		installed  string
		wantSteps  string
		wantTarget string // backupTargetName of the old volume after the run
		wantBlock  int64
	}{
		{"v1.7.2", "[v1.7.x->v1.8.0 v1.9.x->v1.10.0]", "default", longhorn.BackupBlockSize2Mi},
		{"v1.9.1", "[v1.9.x->v1.10.0]", "", longhorn.BackupBlockSize2Mi},
		{"v1.10.0", "[]", "", 0},
	}
	for _, c := range cases {
		cs := fake.NewSimpleClientset(
			&longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: "current-longhorn-version", Namespace: ns}, Value: c.installed},
			&longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v1", Namespace: ns}},
		)
		from := ""
		_, err := preUpgradeCheck(ctx, cs, ns, "v1.10.1")
		if c.installed == "v1.7.2" {
			// A refused path records nothing; post-upgrade is then told by flag.
			if err == nil {
				t.Fatalf("pre-upgrade allowed v1.7.2 -> v1.10.1")
			}
			from = c.installed
		} else if err != nil {
			t.Fatalf("%s: pre-upgrade: %v", c.installed, err)
		}
		s, err := cs.LonghornV1beta2().Settings(ns).Get(ctx, "current-longhorn-version", metav1.GetOptions{})
		if err != nil || (from == "") != (s.Annotations[UpgradeFromVersionAnnotation] == c.installed) {
			t.Fatalf("%s: recorded %v (%v)", c.installed, s.Annotations, err)
		}
		s.Value = "v1.10.1" // the new managers start
		if _, err := cs.LonghornV1beta2().Settings(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := postUpgrade(ctx, &out, cs, postUpgradeOptions{namespace: ns, from: from, target: "v1.10.1", wait: 5 * time.Second}); err != nil {
			t.Fatalf("%s: post-upgrade: %v\n%s", c.installed, err, out.String())
		}
		if !strings.Contains(out.String(), "steps "+c.wantSteps) {
			t.Errorf("%s: output lacks steps %s:\n%s", c.installed, c.wantSteps, out.String())
		}
		v, _ := cs.LonghornV1beta2().Volumes(ns).Get(ctx, "v1", metav1.GetOptions{})
		if v.Spec.BackupTargetName != c.wantTarget || v.Spec.BackupBlockSize != c.wantBlock {
			t.Errorf("%s: volume after post-upgrade: target %q block %d, want %q %d", c.installed,
				v.Spec.BackupTargetName, v.Spec.BackupBlockSize, c.wantTarget, c.wantBlock)
		}
		s, _ = cs.LonghornV1beta2().Settings(ns).Get(ctx, "current-longhorn-version", metav1.GetOptions{})
		if _, ok := s.Annotations[UpgradeFromVersionAnnotation]; ok {
			t.Errorf("%s: record not cleared", c.installed)
		}
	}
}

// post-upgrade refuses to migrate while the managers of the target version
// are not running.
func TestPostUpgradeWaitsForManagers(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewSimpleClientset(&longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: "current-longhorn-version",
		Namespace: "longhorn-system"}, Value: "v1.9.0"})
	var out bytes.Buffer
	err := postUpgrade(ctx, &out, cs, postUpgradeOptions{namespace: "longhorn-system", target: "v1.10.0", wait: 1500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), `managers of version v1.10.0 are not running`) || !strings.Contains(err.Error(), `"v1.9.0"`) {
		t.Fatalf("got %v", err)
	}
}
