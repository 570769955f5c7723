package controller

import (
	"context"
	"fmt"
	"reflect"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// RecurringJobController keeps one Kubernetes CronJob per RecurringJob
// (Longhorn's shape: same name, the job's cron, running `longhorn
// recurring-job <name>` from the manager's image with the manager's
// service account); the CronJob is owned by the RecurringJob, so the
// garbage collector removes it with the job.
type RecurringJobController struct {
	*env
	w *Worker
}

func newRecurringJobController(e *env) (runner, error) {
	c := &RecurringJobController{env: e}
	c.w = NewWorker("longhorn-recurring-job", c.syncRecurringJob)
	if err := addHandler(e.ds.RecurringJobInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *RecurringJobController) run(ctx context.Context, workers int) error {
	return c.w.Run(ctx, workers)
}

// Labels of the CronJobs of recurring jobs (Longhorn's).
const (
	labelManagedBy       = "longhorn.io/managed-by"
	labelRecurringJobKey = "recurring-job.longhorn.io"
)

// cronJobHistoryLimit keeps one finished Job of each kind (Longhorn's).
const cronJobHistoryLimit int32 = 1

// recurringJobCronJob is the CronJob of job in namespace. Pure.
func recurringJobCronJob(job *longhorn.RecurringJob, namespace, image, serviceAccount string) *batchv1.CronJob {
	isController := true
	limit, backoff := cronJobHistoryLimit, int32(3)
	labels := map[string]string{labelManagedBy: "longhorn-manager", labelRecurringJobKey: job.Name}
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: longhorn.SchemeGroupVersion.String(), Kind: "RecurringJob",
				Name: job.Name, UID: job.UID, Controller: &isController}}},
		Spec: batchv1.CronJobSpec{
			Schedule: job.Spec.Cron, ConcurrencyPolicy: batchv1.ForbidConcurrent,
			SuccessfulJobsHistoryLimit: &limit, FailedJobsHistoryLimit: &limit,
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: batchv1.JobSpec{BackoffLimit: &backoff, Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						ServiceAccountName: serviceAccount, RestartPolicy: corev1.RestartPolicyOnFailure,
						Containers: []corev1.Container{{
							Name: job.Name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
							Command: []string{"longhorn", "recurring-job", job.Name},
							Env: []corev1.EnvVar{
								{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
								{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
							},
						}},
					},
				}},
			},
		},
	}
}

func (c *RecurringJobController) syncRecurringJob(ctx context.Context, key string) (Result, error) {
	jRO, err := c.ds.GetRecurringJobRO(ctx, splitKey(key))
	if apierrors.IsNotFound(err) {
		return Done, nil // its CronJob goes with it (owner reference)
	}
	if err != nil {
		return Done, err
	}
	if !c.responsible(ctx, "", jRO.Status.OwnerID) || jRO.DeletionTimestamp != nil {
		return Done, nil
	}
	if jRO.Status.OwnerID != c.opts.NodeName {
		j := jRO.DeepCopy()
		j.Status.OwnerID = c.opts.NodeName
		if _, err := c.ds.UpdateRecurringJobStatus(ctx, j); err != nil {
			return Done, ignoreConflict(err)
		}
	}
	image := c.opts.ManagerImage
	if image == "" {
		image = c.opts.InstanceManagerImage
	}
	want := recurringJobCronJob(jRO, c.opts.Namespace, image, c.opts.ServiceAccount)
	cronJobs := c.kube.BatchV1().CronJobs(c.opts.Namespace)
	cur, err := cronJobs.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cronJobs.Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			return Done, fmt.Errorf("create cronjob %s: %w", want.Name, err)
		}
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	if reflect.DeepEqual(cur.Spec.Schedule, want.Spec.Schedule) && reflect.DeepEqual(cur.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image,
		want.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image) && reflect.DeepEqual(cur.Labels, want.Labels) {
		return Done, nil
	}
	upd := cur.DeepCopy()
	upd.Labels, upd.OwnerReferences, upd.Spec = want.Labels, want.OwnerReferences, want.Spec
	if _, err := cronJobs.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return Done, fmt.Errorf("update cronjob %s: %w", want.Name, err)
	}
	return Done, nil
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}
