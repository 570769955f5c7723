package webhook

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// RecurringJobStore gives the retention limit: setting
// recurring-job-max-retention (1-250, default 100).
type RecurringJobStore interface {
	MaxRecurringJobRetention() (int, error)
}

// RecurringJobKind is the admission registration for recurring jobs.
func RecurringJobKind(store RecurringJobStore) Kind[*longhorn.RecurringJob] {
	return Kind[*longhorn.RecurringJob]{
		Resource:   "recurringjobs",
		New:        func() *longhorn.RecurringJob { return &longhorn.RecurringJob{} },
		Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
		Mutate: func(_ context.Context, req Request[*longhorn.RecurringJob]) ([]PatchOp, error) {
			return mutateRecurringJob(req.Object), nil
		},
		Validate: func(_ context.Context, req Request[*longhorn.RecurringJob]) error {
			maxRetain, err := store.MaxRecurringJobRetention()
			if err != nil {
				return fmt.Errorf("read recurring-job-max-retention: %w", err)
			}
			return validateRecurringJob(req.Object, maxRetain)
		},
	}
}

// DefaultRecurringJobConcurrency is the concurrency of a RecurringJob
// created without one (Longhorn's default: 10 volumes at once).
const DefaultRecurringJobConcurrency = 10

func mutateRecurringJob(j *longhorn.RecurringJob) []PatchOp {
	var ops []PatchOp
	add := func(path string, v any) { ops = append(ops, PatchOp{Op: "add", Path: path, Value: v}) }
	if j.Spec.Name == "" {
		add("/spec/name", j.Name)
	}
	if j.Spec.RetentionPolicy == "" {
		add("/spec/retentionPolicy", longhorn.RecurringJobRetentionPolicyCountBased)
	}
	if j.Spec.Concurrency == 0 {
		add("/spec/concurrency", DefaultRecurringJobConcurrency)
	}
	if j.Spec.Groups == nil {
		add("/spec/groups", []string{})
	}
	if j.Spec.Task == longhorn.RecurringJobTypeFilesystemTrim && j.Spec.Retain != 0 {
		// Longhorn's mutation: retention means nothing to a trim
		ops = append(ops, PatchOp{Op: "replace", Path: "/spec/retain", Value: 0})
	}
	return ops
}

// retainingTasks keep `retain` snapshots or backups and need at least one
// under count-based retention.
var retainingTasks = map[longhorn.RecurringJobType]bool{
	longhorn.RecurringJobTypeSnapshot: true, longhorn.RecurringJobTypeSnapshotForceCreate: true,
	longhorn.RecurringJobTypeBackup: true, longhorn.RecurringJobTypeBackupForceCreate: true,
}

// unsupportedTasks are Longhorn's tasks this product cannot run yet: the
// webhook refuses them rather than keep a job that would only fail.
var unsupportedTasks = map[longhorn.RecurringJobType]string{
	longhorn.RecurringJobTypeSystemBackup: "system backups",
}

func validateRecurringJob(j *longhorn.RecurringJob, maxRetain int) error {
	s := &j.Spec
	if err := ValidateName("metadata.name", j.Name); err != nil {
		return err
	}
	if s.Name != j.Name {
		return Invalid("spec.name", "%q must equal metadata.name %q", s.Name, j.Name)
	}
	if err := oneOf("spec.task", s.Task, longhorn.RecurringJobTypeSnapshot, longhorn.RecurringJobTypeSnapshotForceCreate,
		longhorn.RecurringJobTypeSnapshotCleanup, longhorn.RecurringJobTypeSnapshotDelete, longhorn.RecurringJobTypeBackup,
		longhorn.RecurringJobTypeBackupForceCreate, longhorn.RecurringJobTypeFilesystemTrim, longhorn.RecurringJobTypeSystemBackup); err != nil {
		return err
	}
	if what, ok := unsupportedTasks[s.Task]; ok {
		return Invalid("spec.task", "%q (%s) is not supported yet", s.Task, what)
	}
	if err := ValidateCron(s.Cron); err != nil {
		return Invalid("spec.cron", "%v", err)
	}
	if err := validateRetention(s, maxRetain); err != nil {
		return err
	}
	if s.Concurrency < 1 {
		return Invalid("spec.concurrency", "%d must be at least 1", s.Concurrency)
	}
	for i, g := range s.Groups {
		if !groupRegexp.MatchString(g) {
			return Invalid(fmt.Sprintf("spec.groups[%d]", i), "group %q may only hold letters, digits, '_', '.' and '-'", g)
		}
	}
	if err := validateJobLabels(s.Labels); err != nil {
		return err
	}
	return validateJobParameters(s)
}

func validateRetention(s *longhorn.RecurringJobSpec, maxRetain int) error {
	if err := oneOf("spec.retentionPolicy", s.RetentionPolicy, longhorn.RecurringJobRetentionPolicyCountBased,
		longhorn.RecurringJobRetentionPolicyAgeBased); err != nil {
		return err
	}
	if s.Retain < 0 || s.Retain > maxRetain {
		return Invalid("spec.retain", "%d is outside 0-%d (setting recurring-job-max-retention)", s.Retain, maxRetain)
	}
	if s.RetentionPolicy == longhorn.RecurringJobRetentionPolicyAgeBased {
		if retainingTasks[s.Task] && s.RetainAge.Duration <= 0 {
			return Invalid("spec.retainAge", "must be a positive duration with retentionPolicy %q", s.RetentionPolicy)
		}
		return nil
	}
	if retainingTasks[s.Task] && s.Retain < 1 {
		return Invalid("spec.retain", "must be 1-%d for task %q", maxRetain, s.Task)
	}
	return nil
}

func validateJobLabels(labels map[string]string) error {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return Invalid("spec.labels["+k+"]", "invalid key: %s", strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
			return Invalid("spec.labels["+k+"]", "invalid value %q: %s", labels[k], strings.Join(errs, "; "))
		}
	}
	return nil
}

func validateJobParameters(s *longhorn.RecurringJobSpec) error {
	for k, v := range s.Parameters {
		field := "spec.parameters[" + k + "]"
		switch k {
		case longhorn.RecurringJobParameterFullBackupInterval:
			if s.Task != longhorn.RecurringJobTypeBackup && s.Task != longhorn.RecurringJobTypeBackupForceCreate {
				return Invalid(field, "only applies to backup tasks, not %q", s.Task)
			}
			if n, err := strconv.Atoi(v); err != nil || n < 0 {
				return Invalid(field, "%q must be a whole number >= 0", v)
			}
		case longhorn.RecurringJobParameterVolumeBackupPolicy:
			if s.Task != longhorn.RecurringJobTypeSystemBackup {
				return Invalid(field, "only applies to task %q", longhorn.RecurringJobTypeSystemBackup)
			}
			if err := oneOf(field, v, "always", "disabled", "if-not-present"); err != nil {
				return err
			}
		default:
			return Invalid(field, "unknown parameter; known: %s, %s",
				longhorn.RecurringJobParameterFullBackupInterval, longhorn.RecurringJobParameterVolumeBackupPolicy)
		}
	}
	return nil
}
