package upgrade

import (
	"context"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned/fake"
)

const testNS = "longhorn-system"

func om(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: labels}
}

// oldObjects are objects as a Longhorn v1.7 install stored them: no backup
// target names, no backup block sizes, plain data-engine-specific settings,
// the RequiredPackages node condition.
func oldObjects() *Objects {
	return &Objects{
		Settings: map[string]*longhorn.Setting{
			"default-replica-count":                {ObjectMeta: om("default-replica-count", nil), Value: "2"},
			"guaranteed-instance-manager-cpu":      {ObjectMeta: om("guaranteed-instance-manager-cpu", nil), Value: `{"v1":"10","v2":"12"}`},
			"engine-replica-timeout":               {ObjectMeta: om("engine-replica-timeout", nil), Value: ""},
			"storage-over-provisioning-percentage": {ObjectMeta: om("storage-over-provisioning-percentage", nil), Value: "150"},
		},
		Volumes: []*longhorn.Volume{
			{ObjectMeta: om("v-old", nil)},
			{ObjectMeta: om("v-new", nil), Spec: longhorn.VolumeSpec{BackupTargetName: "offsite", BackupBlockSize: longhorn.BackupBlockSize16Mi}},
		},
		Backups: []*longhorn.Backup{
			{ObjectMeta: om("b-old", map[string]string{"backup-volume": "v-old"})},
		},
		BackupVolumes: []*longhorn.BackupVolume{
			{ObjectMeta: om("v-old", nil)},
			{ObjectMeta: om("bv-2f3a", map[string]string{"backup-target": "offsite"}),
				Spec: longhorn.BackupVolumeSpec{BackupTargetName: "offsite", VolumeName: "v-new"}},
		},
		Nodes: []*longhorn.Node{
			{ObjectMeta: om("n1", nil), Status: longhorn.NodeStatus{Conditions: []longhorn.Condition{
				{Type: longhorn.NodeConditionTypeReady, Status: longhorn.ConditionStatusTrue},
				{Type: longhorn.NodeConditionTypeRequiredPackages, Status: longhorn.ConditionStatusFalse},
			}}},
		},
	}
}

// Each step on the fixture: exactly the fields Longhorn's step changes, and
// nothing already in the new shape.
func TestSteps(t *testing.T) {
	cases := []struct {
		key   string
		check func(t *testing.T, o *Objects)
	}{
		{"v1.7.x->v1.8.0", func(t *testing.T, o *Objects) {
			want(t, "volume v-old backupTargetName", o.Volumes[0].Spec.BackupTargetName, "default")
			want(t, "volume v-new backupTargetName", o.Volumes[1].Spec.BackupTargetName, "offsite")
			want(t, "backup volume v-old target", o.BackupVolumes[0].Spec.BackupTargetName, "default")
			want(t, "backup volume v-old volumeName", o.BackupVolumes[0].Spec.VolumeName, "v-old")
			want(t, "backup volume v-old labels", o.BackupVolumes[0].Labels, map[string]string{"backup-target": "default", "backup-volume": "v-old"})
			want(t, "backup volume bv-2f3a labels", o.BackupVolumes[1].Labels, map[string]string{"backup-target": "offsite", "backup-volume": "v-new"})
			want(t, "backup b-old labels", o.Backups[0].Labels, map[string]string{"backup-volume": "v-old", "backup-target": "default"})
			want(t, "backup b-old status.backupTargetName", o.Backups[0].Status.BackupTargetName, "default")
			want(t, "volume v-old backupBlockSize (not this step)", o.Volumes[0].Spec.BackupBlockSize, int64(0))
		}},
		{"v1.9.x->v1.10.0", func(t *testing.T, o *Objects) {
			want(t, "node conditions", o.Nodes[0].Status.Conditions, []longhorn.Condition{{Type: longhorn.NodeConditionTypeReady, Status: longhorn.ConditionStatusTrue}})
			want(t, "default-replica-count", o.Settings["default-replica-count"].Value, `{"v1":"2","v2":"2"}`)
			want(t, "guaranteed-instance-manager-cpu", o.Settings["guaranteed-instance-manager-cpu"].Value, `{"v1":"10","v2":"12"}`)
			want(t, "engine-replica-timeout (empty: the default)", o.Settings["engine-replica-timeout"].Value, "")
			want(t, "storage-over-provisioning-percentage (not per engine)", o.Settings["storage-over-provisioning-percentage"].Value, "150")
			want(t, "volume v-old backupBlockSize", o.Volumes[0].Spec.BackupBlockSize, longhorn.BackupBlockSize2Mi)
			want(t, "volume v-new backupBlockSize", o.Volumes[1].Spec.BackupBlockSize, longhorn.BackupBlockSize16Mi)
			want(t, "backup b-old backupBlockSize", o.Backups[0].Spec.BackupBlockSize, longhorn.BackupBlockSize2Mi)
			want(t, "volume v-old backupTargetName (not this step)", o.Volumes[0].Spec.BackupTargetName, "")
		}},
	}
	if len(cases) != len(Steps) {
		t.Fatalf("%d steps registered, %d tested", len(Steps), len(cases))
	}
	for i, c := range cases {
		s := Steps[i]
		if s.Key() != c.key {
			t.Fatalf("step %d is %s, want %s", i, s.Key(), c.key)
		}
		t.Run(c.key, func(t *testing.T) {
			o := oldObjects()
			if err := s.Apply(o); err != nil {
				t.Fatal(err)
			}
			c.check(t, o)
		})
	}
}

func want(t *testing.T, what string, got, wantV any) {
	t.Helper()
	if !reflect.DeepEqual(got, wantV) {
		t.Errorf("%s: got %#v, want %#v", what, got, wantV)
	}
}

// Every step applied to its own output changes nothing, so a run from an
// unknown version may run them all.
func TestStepsAreIdempotent(t *testing.T) {
	for _, s := range Steps {
		once := oldObjects()
		if err := s.Apply(once); err != nil {
			t.Fatal(err)
		}
		twice := once.DeepCopy()
		if err := s.Apply(twice); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(once, twice) {
			t.Errorf("step %s is not idempotent", s.Key())
		}
	}
}

// A stored value that is not valid is reported, not rewritten.
func TestStepRefusesInvalidSetting(t *testing.T) {
	o := oldObjects()
	o.Settings["default-replica-count"].Value = "many"
	if err := Steps[1].Apply(o); err == nil {
		t.Fatal("an invalid default-replica-count was migrated")
	}
	want(t, "invalid value kept", o.Settings["default-replica-count"].Value, "many")
}

func TestPlanFor(t *testing.T) {
	cases := []struct {
		from string
		keys []string
		all  bool
	}{
		{"v1.6.3", []string{"v1.7.x->v1.8.0", "v1.9.x->v1.10.0"}, false},
		{"v0.1.0", []string{"v1.7.x->v1.8.0", "v1.9.x->v1.10.0"}, false},
		{"v1.8.0-rc1", []string{"v1.7.x->v1.8.0", "v1.9.x->v1.10.0"}, false},
		{"v1.8.0", []string{"v1.9.x->v1.10.0"}, false},
		{"v1.9.2", []string{"v1.9.x->v1.10.0"}, false},
		{"v1.10.0", nil, false},
		{"v1.12.1", nil, false},
		{"", []string{"v1.7.x->v1.8.0", "v1.9.x->v1.10.0"}, true},
		{"7f3c421-dirty", []string{"v1.7.x->v1.8.0", "v1.9.x->v1.10.0"}, true},
	}
	for _, c := range cases {
		p := PlanFor(c.from)
		if !slices.Equal(p.Keys(), c.keys) || (p.AllSteps != "") != c.all {
			t.Errorf("PlanFor(%q) = %v (all: %q), want %v all=%v", c.from, p.Keys(), p.AllSteps, c.keys, c.all)
		}
	}
}

// Load, Migrate and Write through a clientset: the changed objects are
// written (spec and status), the unchanged ones are not, and a second pass
// writes nothing.
func TestLoadMigrateWrite(t *testing.T) {
	ctx := context.Background()
	var objs []runtime.Object
	o := oldObjects()
	for _, s := range o.Settings {
		objs = append(objs, s)
	}
	for _, v := range o.Volumes {
		objs = append(objs, v)
	}
	for _, b := range o.Backups {
		objs = append(objs, b)
	}
	for _, bv := range o.BackupVolumes {
		objs = append(objs, bv)
	}
	for _, n := range o.Nodes {
		objs = append(objs, n)
	}
	cs := fake.NewSimpleClientset(objs...)
	pass := func() []string {
		before, err := Load(ctx, cs, testNS)
		if err != nil {
			t.Fatal(err)
		}
		after := before.DeepCopy()
		if err := PlanFor("v1.7.2").Migrate(after); err != nil {
			t.Fatal(err)
		}
		written, err := Write(ctx, cs, before, after)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(written)
		return written
	}
	got := pass()
	want(t, "written", got, []string{"Backup/b-old", "BackupVolume/bv-2f3a", "BackupVolume/v-old", "Node/n1",
		"Setting/default-replica-count", "Volume/v-old"})
	b, err := cs.LonghornV1beta2().Backups(testNS).Get(ctx, "b-old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want(t, "stored backup", []any{b.Labels["backup-target"], b.Spec.BackupBlockSize, b.Status.BackupTargetName},
		[]any{"default", longhorn.BackupBlockSize2Mi, "default"})
	n, err := cs.LonghornV1beta2().Nodes(testNS).Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want(t, "stored node conditions", len(n.Status.Conditions), 1)
	if again := pass(); len(again) != 0 {
		t.Errorf("second pass wrote %v", again)
	}
}
