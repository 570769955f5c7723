package recurringjob

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func vol(name string, labels map[string]string) *longhorn.Volume {
	return &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// Volumes join a job by its label, by a group label of one of its groups,
// or, with no recurring-job label at all, through the default group.
func TestSelectVolumes(t *testing.T) {
	vols := []*longhorn.Volume{
		vol("by-job", map[string]string{"recurring-job.longhorn.io/daily": "enabled"}),
		vol("by-group", map[string]string{"recurring-job-group.longhorn.io/gold": "enabled"}),
		vol("other-job", map[string]string{"recurring-job.longhorn.io/weekly": "enabled"}),
		vol("disabled", map[string]string{"recurring-job.longhorn.io/daily": "disabled"}),
		vol("plain", map[string]string{"app": "x"}),
	}
	job := &longhorn.RecurringJob{ObjectMeta: metav1.ObjectMeta{Name: "daily"}, Spec: longhorn.RecurringJobSpec{Groups: []string{"gold"}}}
	if got, want := SelectVolumes(job, vols), []string{"by-group", "by-job"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	job.Spec.Groups = []string{"default"}
	if got, want := SelectVolumes(job, vols), []string{"by-job", "plain"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("default group: got %v, want %v", got, want)
	}
}

func TestExpired(t *testing.T) {
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	items := []Item{{"c", now.Add(-1 * time.Hour)}, {"a", now.Add(-3 * time.Hour)}, {"b", now.Add(-2 * time.Hour)}}
	cases := []struct {
		policy longhorn.RecurringJobRetentionPolicy
		retain int
		age    time.Duration
		want   []string
	}{
		{longhorn.RecurringJobRetentionPolicyCountBased, 2, 0, []string{"a"}},
		{longhorn.RecurringJobRetentionPolicyCountBased, 0, 0, []string{"a", "b", "c"}},
		{longhorn.RecurringJobRetentionPolicyCountBased, 5, 0, nil},
		{"", 1, 0, []string{"a", "b"}},
		{longhorn.RecurringJobRetentionPolicyAgeBased, 0, 90 * time.Minute, []string{"a", "b"}},
		{longhorn.RecurringJobRetentionPolicyAgeBased, 0, 0, nil},
	}
	for _, tc := range cases {
		if got := Expired(items, tc.policy, tc.retain, tc.age, now); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s retain %d age %v: %v, want %v", tc.policy, tc.retain, tc.age, got, tc.want)
		}
	}
}
