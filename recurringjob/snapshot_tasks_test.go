package recurringjob

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/fake"
)

// snapshot-delete keeps the volume's `retain` newest user snapshots (of any
// job or none) and deletes the rest; snapshot-cleanup deletes the system
// snapshots (not user created) and leaves user snapshots alone. Only the
// labelled, attached volume is touched.
func TestSnapshotDeleteAndCleanupTasks(t *testing.T) {
	const ns = "longhorn-system"
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	snap := func(name, vol string, user bool, age int) *longhorn.Snapshot {
		return &longhorn.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: longhorn.SnapshotSpec{Volume: vol},
			Status: longhorn.SnapshotStatus{UserCreated: user, ReadyToUse: true,
				CreationTime: t0.Add(time.Duration(age) * time.Hour).Format(time.RFC3339)}}
	}
	vol := func(name string, labels map[string]string) *longhorn.Volume {
		return &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Status: longhorn.VolumeStatus{State: longhorn.VolumeStateAttached}}
	}
	job := func(name string, task longhorn.RecurringJobType, retain int) *longhorn.RecurringJob {
		return &longhorn.RecurringJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: longhorn.RecurringJobSpec{Name: name, Task: task, Retain: retain, Concurrency: 1}}
	}
	objs := []runtime.Object{
		job("del", longhorn.RecurringJobTypeSnapshotDelete, 2), job("clean", longhorn.RecurringJobTypeSnapshotCleanup, 0),
		vol("v1", map[string]string{"recurring-job.longhorn.io/del": "enabled", "recurring-job.longhorn.io/clean": "enabled"}),
		vol("v2", map[string]string{"other": "x"}),
		snap("u1", "v1", true, 1), snap("u2", "v1", true, 2), snap("u3", "v1", true, 3), snap("u4", "v1", true, 4),
		snap("sys1", "v1", false, 5), snap("sys2", "v1", false, 6),
		snap("o1", "v2", true, 1), snap("o2", "v2", false, 2),
	}
	lh := fake.NewSimpleClientset(objs...)
	r := &Runner{LH: lh, Namespace: ns, Log: logrus.New(), Poll: time.Millisecond, now: func() time.Time { return t0.Add(24 * time.Hour) }}
	left := func() []string {
		list, err := lh.LonghornV1beta2().Snapshots(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range list.Items {
			names = append(names, s.Name)
		}
		sort.Strings(names)
		return names
	}
	if err := r.Run(context.Background(), "del"); err != nil {
		t.Fatalf("snapshot-delete: %v", err)
	}
	if got, want := left(), []string{"o1", "o2", "sys1", "sys2", "u3", "u4"}; !slices.Equal(got, want) {
		t.Fatalf("after snapshot-delete retain 2: %v, want %v", got, want)
	}
	if err := r.Run(context.Background(), "clean"); err != nil {
		t.Fatalf("snapshot-cleanup: %v", err)
	}
	if got, want := left(), []string{"o1", "o2", "u3", "u4"}; !slices.Equal(got, want) {
		t.Fatalf("after snapshot-cleanup: %v, want %v", got, want)
	}
}
