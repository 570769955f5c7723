// Package recurringjob runs one RecurringJob once, as the Kubernetes CronJob
// the RecurringJob controller makes does with `longhorn recurring-job
// <name>` (Longhorn's recurring-job subcommand): it selects the job's
// volumes by label, and for each (spec.concurrency at a time) takes a
// snapshot or a backup, or cleans snapshots up, keeping spec.retain of the
// job's snapshots or backups. It works through the Longhorn objects only
// (Snapshot and Backup objects, which the manager's controllers act on).
package recurringjob

import (
	"sort"
	"strings"
	"time"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// LabelRecurringJob is the label Longhorn puts on the snapshots and backups
// a recurring job makes (its value: the job's name).
const LabelRecurringJob = "RecurringJob"

// SelectVolumes returns, sorted, the volumes job runs on (Longhorn's
// selection): those labeled recurring-job.longhorn.io/<job>: enabled, those
// labeled recurring-job-group.longhorn.io/<group>: enabled for one of the
// job's groups, and, when the job is in the default group, those with no
// recurring-job or recurring-job-group label at all. Pure.
func SelectVolumes(job *longhorn.RecurringJob, vols []*longhorn.Volume) []string {
	inDefault := false
	groups := map[string]bool{}
	for _, g := range job.Spec.Groups {
		groups[g] = true
		inDefault = inDefault || g == longhorn.RecurringJobGroupDefault
	}
	var out []string
	for _, v := range vols {
		if v.DeletionTimestamp != nil {
			continue
		}
		if selected(job.Name, groups, inDefault, v.Labels) {
			out = append(out, v.Name)
		}
	}
	sort.Strings(out)
	return out
}

func selected(job string, groups map[string]bool, inDefault bool, labels map[string]string) bool {
	labeled := false
	for k, val := range labels {
		if name, ok := strings.CutPrefix(k, types.RecurringJobLabelPrefix); ok {
			labeled = true
			if name == job && val == types.RecurringJobLabelValueEnabled {
				return true
			}
		}
		if g, ok := strings.CutPrefix(k, types.RecurringJobGroupLabelPrefix); ok {
			labeled = true
			if groups[g] && val == types.RecurringJobLabelValueEnabled {
				return true
			}
		}
	}
	return inDefault && !labeled
}

// Item is a snapshot or backup a retention decision looks at.
type Item struct {
	Name    string
	Created time.Time
}

// Expired returns the items a retention policy removes: count-based keeps
// the retain newest (retain 0 keeps none), age-based those younger than
// retainAge (retainAge 0 keeps all). Oldest first. Pure.
func Expired(items []Item, policy longhorn.RecurringJobRetentionPolicy, retain int, retainAge time.Duration, now time.Time) []string {
	sorted := append([]Item(nil), items...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if !sorted[i].Created.Equal(sorted[j].Created) {
			return sorted[i].Created.Before(sorted[j].Created)
		}
		return sorted[i].Name < sorted[j].Name
	})
	var out []string
	if policy == longhorn.RecurringJobRetentionPolicyAgeBased {
		if retainAge <= 0 {
			return nil
		}
		for _, it := range sorted {
			if now.Sub(it.Created) > retainAge {
				out = append(out, it.Name)
			}
		}
		return out
	}
	for i := 0; i < len(sorted)-retain; i++ {
		out = append(out, sorted[i].Name)
	}
	return out
}
