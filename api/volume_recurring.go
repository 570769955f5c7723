package api

import (
	"context"
	"net/http"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// A volume's recurring jobs are labels on the volume, as in Longhorn:
// recurring-job.longhorn.io/<job>=enabled for a job and
// recurring-job-group.longhorn.io/<group>=enabled for a group.
func init() {
	volumeActionTable["recurringJobAdd"] = volumeAction{(*Server).recurringJobAdd,
		ActionDef{Input: "volumeRecurringJobInput", Output: "volumeRecurringJob"}, VolumeRecurringJobInput{}}
	volumeActionTable["recurringJobList"] = volumeAction{(*Server).recurringJobList, ActionDef{Output: "volumeRecurringJob"}, nil}
	volumeActionTable["recurringJobDelete"] = volumeAction{(*Server).recurringJobDelete,
		ActionDef{Input: "volumeRecurringJobInput", Output: "volumeRecurringJob"}, VolumeRecurringJobInput{}}
}

// VolumeRecurringJob is one job or group a volume belongs to.
type VolumeRecurringJob struct {
	Resource
	Name    string `json:"name"`
	IsGroup bool   `json:"isGroup"`
}

// VolumeRecurringJobInput is the body of recurringJobAdd and
// recurringJobDelete.
type VolumeRecurringJobInput struct {
	Name    string `json:"name"`
	IsGroup bool   `json:"isGroup"`
}

// recurringJobLabel is the volume label that selects job or group name.
func recurringJobLabel(ref RecurringJobRef) string {
	if ref.IsGroup {
		return types.RecurringJobGroupLabelPrefix + ref.Name
	}
	return types.RecurringJobLabelPrefix + ref.Name
}

// recurringJobLabels turns a create-time selector into volume labels; a
// name that cannot be a label name part is a 422.
func recurringJobLabels(refs []RecurringJobRef) (map[string]string, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, ref := range refs {
		if err := checkRecurringJobName("recurringJobSelector", ref.Name); err != nil {
			return nil, err
		}
		out[recurringJobLabel(ref)] = types.RecurringJobLabelValueEnabled
	}
	return out, nil
}

func checkRecurringJobName(field, name string) error {
	if errs := validation.IsQualifiedName(name); len(errs) > 0 || strings.Contains(name, "/") {
		return invalidInput(field, "%q is not a valid recurring job or group name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// recurringJobSelector reads the jobs and groups a volume belongs to from
// its labels, sorted (groups first, as names may repeat).
func recurringJobSelector(v *longhorn.Volume) []RecurringJobRef {
	out := []RecurringJobRef{}
	for k, val := range v.Labels {
		if val != types.RecurringJobLabelValueEnabled {
			continue
		}
		if name, ok := strings.CutPrefix(k, types.RecurringJobGroupLabelPrefix); ok {
			out = append(out, RecurringJobRef{Name: name, IsGroup: true})
		} else if name, ok := strings.CutPrefix(k, types.RecurringJobLabelPrefix); ok {
			out = append(out, RecurringJobRef{Name: name})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].IsGroup != out[j].IsGroup {
			return out[i].IsGroup
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func recurringJobCollection(u urls, v *longhorn.Volume) Collection {
	var out []VolumeRecurringJob
	for _, ref := range recurringJobSelector(v) {
		res := emptyResource()
		res.ID, res.Type = ref.Name, "volumeRecurringJob"
		out = append(out, VolumeRecurringJob{Resource: res, Name: ref.Name, IsGroup: ref.IsGroup})
	}
	return u.newCollection("volumeRecurringJob", "volumes/"+v.Name+"/recurringjobs", out)
}

func (s *Server) recurringJobList(_ context.Context, _ *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	return http.StatusOK, recurringJobCollection(u, v), nil
}

// recurringJobInput decodes and checks the job reference; a job (not a
// group) must exist, as Longhorn checks.
func (s *Server) recurringJobInput(ctx context.Context, r *http.Request) (RecurringJobRef, error) {
	var in VolumeRecurringJobInput
	if err := decodeBody(r, &in); err != nil {
		return RecurringJobRef{}, err
	}
	if in.Name == "" {
		return RecurringJobRef{}, invalidInput("name", "is required: the recurring job or group")
	}
	if err := checkRecurringJobName("name", in.Name); err != nil {
		return RecurringJobRef{}, err
	}
	if !in.IsGroup {
		if _, err := s.ds.GetRecurringJobRO(ctx, in.Name); apierrors.IsNotFound(err) {
			return RecurringJobRef{}, invalidInput("name", "recurring job %q does not exist", in.Name)
		} else if err != nil {
			return RecurringJobRef{}, err
		}
	}
	return RecurringJobRef{Name: in.Name, IsGroup: in.IsGroup}, nil
}

func (s *Server) recurringJobAdd(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	ref, err := s.recurringJobInput(ctx, r)
	if err != nil {
		return 0, nil, err
	}
	return s.editRecurringLabels(ctx, u, v.Name, func(l map[string]string) { l[recurringJobLabel(ref)] = types.RecurringJobLabelValueEnabled })
}

func (s *Server) recurringJobDelete(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	var in VolumeRecurringJobInput
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Name == "" {
		return 0, nil, invalidInput("name", "is required: the recurring job or group")
	}
	ref := RecurringJobRef{Name: in.Name, IsGroup: in.IsGroup}
	return s.editRecurringLabels(ctx, u, v.Name, func(l map[string]string) { delete(l, recurringJobLabel(ref)) })
}

// editRecurringLabels changes the volume's labels and answers with its
// recurring jobs.
func (s *Server) editRecurringLabels(ctx context.Context, u urls, name string, edit func(map[string]string)) (int, any, error) {
	var out *longhorn.Volume
	_, _, err := s.updateVolume(ctx, u, name, func(v *longhorn.Volume) error {
		if v.Labels == nil {
			v.Labels = map[string]string{}
		}
		edit(v.Labels)
		out = v
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, recurringJobCollection(u, out), nil
}
