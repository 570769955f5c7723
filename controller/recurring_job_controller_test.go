package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// A RecurringJob gets a CronJob of its name running `longhorn
// recurring-job <name>` on its cron from the product image, owned by the
// job; a new cron reaches the CronJob.
func TestRecurringJobCronJob(t *testing.T) {
	job := &longhorn.RecurringJob{ObjectMeta: metav1.ObjectMeta{Name: "daily", Namespace: testNS, UID: "u1"},
		Spec: longhorn.RecurringJobSpec{Name: "daily", Task: longhorn.RecurringJobTypeSnapshot, Cron: "0 1 * * *", Retain: 2, Concurrency: 1}}
	f := newFixture(t, job)
	c := fixtureController[*RecurringJobController](f)
	f.settle()
	if _, err := c.syncRecurringJob(f.ctx, testNS+"/daily"); err != nil {
		t.Fatal(err)
	}
	f.settle()
	if _, err := c.syncRecurringJob(f.ctx, testNS+"/daily"); err != nil {
		t.Fatal(err)
	}
	cj, err := f.kube.BatchV1().CronJobs(testNS).Get(f.ctx, "daily", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	ctr := pod.Containers[0]
	if cj.Spec.Schedule != "0 1 * * *" || ctr.Image != "longhorn:test" || len(ctr.Command) != 3 || ctr.Command[1] != "recurring-job" ||
		ctr.Command[2] != "daily" || cj.OwnerReferences[0].UID != "u1" || cj.Spec.ConcurrencyPolicy != "Forbid" ||
		cj.Labels["recurring-job.longhorn.io"] != "daily" {
		t.Fatalf("cronjob %+v", cj)
	}
	if ctr.Env[0].Name != "POD_NAMESPACE" || ctr.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Fatalf("env %+v", ctr.Env)
	}
	j, _ := f.lh.LonghornV1beta2().RecurringJobs(testNS).Get(f.ctx, "daily", metav1.GetOptions{})
	if j.Status.OwnerID != "n1" {
		t.Fatalf("owner %q", j.Status.OwnerID)
	}
	j.Spec.Cron = "*/5 * * * *"
	if _, err := f.lh.LonghornV1beta2().RecurringJobs(testNS).Update(f.ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// the fixture's settle does not look at recurring jobs: wait for the cache
	deadline := time.Now().Add(5 * time.Second)
	for {
		if cur, err := f.ds.GetRecurringJobRO(f.ctx, "daily"); err == nil && cur.Spec.Cron == j.Spec.Cron {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache did not see the new cron")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := c.syncRecurringJob(f.ctx, testNS+"/daily"); err != nil {
		t.Fatal(err)
	}
	cj, _ = f.kube.BatchV1().CronJobs(testNS).Get(f.ctx, "daily", metav1.GetOptions{})
	if cj.Spec.Schedule != "*/5 * * * *" {
		t.Fatalf("schedule %q after the cron changed", cj.Spec.Schedule)
	}
}
