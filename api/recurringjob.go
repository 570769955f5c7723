package api

import (
	"context"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// RecurringJob is a recurring job resource (Longhorn's api/model.go
// RecurringJob: the spec fields inline).
type RecurringJob struct {
	Resource
	Name        string                    `json:"name"`
	Groups      []string                  `json:"groups"`
	Task        longhorn.RecurringJobType `json:"task"`
	Cron        string                    `json:"cron"`
	Retain      int                       `json:"retain"`
	Concurrency int                       `json:"concurrency"`
	Labels      map[string]string         `json:"labels"`
	Parameters  map[string]string         `json:"parameters"`
}

func (u urls) recurringJob(j *longhorn.RecurringJob) RecurringJob {
	return RecurringJob{Resource: u.newResource("recurringJob", "recurringjobs", j.Name),
		Name: j.Name, Groups: nonNil(j.Spec.Groups), Task: j.Spec.Task, Cron: j.Spec.Cron, Retain: j.Spec.Retain,
		Concurrency: j.Spec.Concurrency, Labels: nonNilMap(j.Spec.Labels), Parameters: nonNilMap(j.Spec.Parameters)}
}

func (s *Server) listRecurringJobs(ctx context.Context, _ *http.Request, u urls) (int, any, error) {
	objs, err := s.ds.ListRecurringJobsRO(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.newCollection("recurringJob", "recurringjobs", toResources(objs, u.recurringJob)), nil
}

func (s *Server) getRecurringJob(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	j, err := s.ds.GetRecurringJobRO(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.recurringJob(j), nil
}

// RecurringJobInput is the body of POST /v1/recurringjobs and PUT
// /v1/recurringjobs/{name} (Longhorn's RecurringJobSpec fields).
type RecurringJobInput struct {
	Name        string                    `json:"name"`
	Groups      []string                  `json:"groups"`
	Task        longhorn.RecurringJobType `json:"task"`
	Cron        string                    `json:"cron"`
	Retain      int                       `json:"retain"`
	Concurrency int                       `json:"concurrency"`
	Labels      map[string]string         `json:"labels"`
	Parameters  map[string]string         `json:"parameters"`
}

// spec checks what the API can tell alone (the webhook checks the rest:
// task, cron, retention, label values) and returns the spec.
func (in RecurringJobInput) spec() (longhorn.RecurringJobSpec, error) {
	if errs := validation.IsDNS1123Subdomain(in.Name); len(errs) > 0 {
		return longhorn.RecurringJobSpec{}, invalidInput("name", "%q is not a valid recurring job name: %s", in.Name, strings.Join(errs, "; "))
	}
	if in.Task == "" {
		return longhorn.RecurringJobSpec{}, invalidInput("task", "is required (snapshot, snapshot-force-create, snapshot-cleanup, snapshot-delete, backup, backup-force-create, filesystem-trim, system-backup)")
	}
	if strings.TrimSpace(in.Cron) == "" {
		return longhorn.RecurringJobSpec{}, invalidInput("cron", "is required: a cron expression such as \"0 2 * * *\"")
	}
	if in.Retain < 0 || in.Concurrency < 0 {
		return longhorn.RecurringJobSpec{}, invalidInput("retain", "retain and concurrency must not be negative")
	}
	concurrency := in.Concurrency
	if concurrency == 0 {
		concurrency = 1
	}
	return longhorn.RecurringJobSpec{Name: in.Name, Groups: nonNil(in.Groups), Task: in.Task, Cron: in.Cron, Retain: in.Retain,
		Concurrency: concurrency, Labels: in.Labels, Parameters: in.Parameters}, nil
}

func (s *Server) createRecurringJob(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	var in RecurringJobInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	spec, err := in.spec()
	if err != nil {
		return 0, nil, err
	}
	j, err := s.ds.CreateRecurringJob(ctx, &longhorn.RecurringJob{ObjectMeta: metav1.ObjectMeta{Name: in.Name}, Spec: spec})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.recurringJob(j), nil
}

// updateRecurringJob replaces the job's spec with the body (the name in the
// path wins; Longhorn's UI sends the whole job).
func (s *Server) updateRecurringJob(ctx context.Context, r *http.Request, u urls) (int, any, error) {
	var in RecurringJobInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	name := r.PathValue("name")
	if in.Name != "" && in.Name != name {
		return 0, nil, invalidInput("name", "%q differs from the job %q in the path; a job cannot be renamed", in.Name, name)
	}
	in.Name = name
	spec, err := in.spec()
	if err != nil {
		return 0, nil, err
	}
	var out *longhorn.RecurringJob
	err = retry.RetryOnConflict(writeBackoff, func() error {
		j, err := s.ds.GetRecurringJob(ctx, name)
		if err != nil {
			return err
		}
		j.Spec.Groups, j.Spec.Task, j.Spec.Cron, j.Spec.Retain = spec.Groups, spec.Task, spec.Cron, spec.Retain
		j.Spec.Concurrency, j.Spec.Labels, j.Spec.Parameters = spec.Concurrency, spec.Labels, spec.Parameters
		out, err = s.ds.UpdateRecurringJob(ctx, j)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, u.recurringJob(out), nil
}

func (s *Server) deleteRecurringJob(ctx context.Context, r *http.Request, _ urls) (int, any, error) {
	if err := s.ds.DeleteRecurringJob(ctx, r.PathValue("name")); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// Orphan is an orphan resource (Longhorn's api/model.go Orphan: name and
// the spec fields inline).
type Orphan struct {
	Resource
	Name       string                  `json:"name"`
	NodeID     string                  `json:"nodeID"`
	OrphanType longhorn.OrphanType     `json:"orphanType"`
	DataEngine longhorn.DataEngineType `json:"dataEngine"`
	Parameters map[string]string       `json:"parameters"`
}
