package manager_test

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// testDetachedRecurringJob: a snapshot job on the detached volume vol skips
// it while setting allow-recurring-job-while-volume-detached is false; set
// to true, the job attaches the volume, takes the snapshot and detaches it
// again. Each run adds one to the job's status.executionCount.
func testDetachedRecurringJob(t *testing.T, c *cluster, vol string) {
	const job = "bak-detached-job"
	c.attach(vol, "")
	c.waitState(vol, longhorn.VolumeStateDetached, "", 90*time.Second)
	if out, err := c.kubectl(fmt.Sprintf(`apiVersion: longhorn.io/v1beta2
kind: RecurringJob
metadata: {name: %s, namespace: %s}
spec: {task: snapshot, cron: "0 0 * * *", retain: 1, concurrency: 1, groups: []}
`, job, ns), "apply", "-f", "-"); err != nil {
		t.Fatalf("recurring job: %v\n%s", err, out)
	}
	if out, err := c.kubectl("", "-n", ns, "label", "volumes.longhorn.io", vol, "recurring-job.longhorn.io/"+job+"=enabled"); err != nil {
		t.Fatalf("label: %v\n%s", err, out)
	}
	run := func(i int) {
		start := time.Now()
		cmd := exec.Command(c.binary, "recurring-job", "--kubeconfig", env.KubeconfigPath, "--namespace", ns, "--timeout", "3m", job)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("recurring-job %s run %d: %v\n%s", job, i, err, out)
		}
		t.Logf("MEASURE recurring-job %s run %d (detached volume): %v", job, i, time.Since(start).Round(time.Millisecond))
		j, err := c.lh.LonghornV1beta2().RecurringJobs(ns).Get(c.ctx, job, metav1.GetOptions{})
		c.must(err)
		if j.Status.ExecutionCount != i {
			t.Fatalf("after run %d: executionCount %d", i, j.Status.ExecutionCount)
		}
	}
	setAllow := func(v string) {
		if out, err := c.kubectl("", "-n", ns, "patch", "settings.longhorn.io", "allow-recurring-job-while-volume-detached",
			"--type", "merge", "-p", fmt.Sprintf(`{"value":%q}`, v)); err != nil {
			t.Fatalf("setting: %v\n%s", err, out)
		}
	}
	run(1)
	if n := c.countJobObjects(vol, job, false); n != 0 || c.volume(vol).Status.State != longhorn.VolumeStateDetached {
		t.Fatalf("setting false: %d snapshots, volume %s; want none and detached", n, c.volume(vol).Status.State)
	}
	setAllow("true")
	defer setAllow("false")
	run(2)
	if n := c.countJobObjects(vol, job, false); n != 1 {
		t.Fatalf("setting true: %d snapshots of the job, want 1", n)
	}
	c.waitState(vol, longhorn.VolumeStateDetached, "", 90*time.Second)
	c.eventually("the job's ticket gone", 30*time.Second, func() (bool, string) {
		va, err := c.lh.LonghornV1beta2().VolumeAttachments(ns).Get(c.ctx, vol, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, left := va.Spec.AttachmentTickets["recurring-job-app-"+job]
		return !left, fmt.Sprintf("tickets %v", va.Spec.AttachmentTickets)
	})
}
