package recurringjob

import (
	"context"
	"testing"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/fake"
)

// Each run adds one to status.executionCount, also when no volume is
// selected; a task that is not supported yet is not counted.
func TestRunCountsExecutions(t *testing.T) {
	ns := "longhorn-system"
	job := &longhorn.RecurringJob{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: ns},
		Spec:   longhorn.RecurringJobSpec{Name: "snap", Task: longhorn.RecurringJobTypeSnapshot, Retain: 1, Concurrency: 1, Groups: []string{"nightly"}},
		Status: longhorn.RecurringJobStatus{OwnerID: "n1"}}
	sysBackup := &longhorn.RecurringJob{ObjectMeta: metav1.ObjectMeta{Name: "sysbak", Namespace: ns},
		Spec: longhorn.RecurringJobSpec{Name: "sysbak", Task: longhorn.RecurringJobTypeSystemBackup, Concurrency: 1}}
	lh := fake.NewSimpleClientset(job, sysBackup)
	r := &Runner{LH: lh, Namespace: ns, Log: logrus.New()}
	for i := 1; i <= 2; i++ {
		if err := r.Run(context.Background(), "snap"); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		got, err := lh.LonghornV1beta2().RecurringJobs(ns).Get(context.Background(), "snap", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.ExecutionCount != i || got.Status.OwnerID != "n1" {
			t.Fatalf("after run %d: status %+v, want executionCount %d and the owner kept", i, got.Status, i)
		}
	}
	if err := r.Run(context.Background(), "sysbak"); err == nil {
		t.Fatal("system-backup ran; want not supported yet")
	}
	got, _ := lh.LonghornV1beta2().RecurringJobs(ns).Get(context.Background(), "sysbak", metav1.GetOptions{})
	if got.Status.ExecutionCount != 0 {
		t.Fatalf("refused task counted: %d", got.Status.ExecutionCount)
	}
}

// full-backup-interval N makes every N-th run (counting from the first,
// by executionCount before the run) a full backup.
func TestBackupModeFullInterval(t *testing.T) {
	job := func(interval string, count int) *longhorn.RecurringJob {
		j := &longhorn.RecurringJob{Spec: longhorn.RecurringJobSpec{Task: longhorn.RecurringJobTypeBackup}, Status: longhorn.RecurringJobStatus{ExecutionCount: count}}
		if interval != "" {
			j.Spec.Parameters = map[string]string{longhorn.RecurringJobParameterFullBackupInterval: interval}
		}
		return j
	}
	cases := []struct {
		interval string
		count    int
		want     longhorn.BackupMode
	}{
		{"", 0, ""}, {"0", 3, ""}, {"3", 0, longhorn.BackupModeFull}, {"3", 1, longhorn.BackupModeIncremental},
		{"3", 2, longhorn.BackupModeIncremental}, {"3", 3, longhorn.BackupModeFull}, {"1", 7, longhorn.BackupModeFull},
	}
	for _, c := range cases {
		if got := backupMode(job(c.interval, c.count)); got != c.want {
			t.Errorf("interval %q, count %d: %q, want %q", c.interval, c.count, got, c.want)
		}
	}
}
