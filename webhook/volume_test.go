package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func TestParseAndRoundSize(t *testing.T) {
	cases := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"2097152", 2 << 20, false},
		{"1", 2 << 20, false},
		{"2097153", 4 << 20, false},
		{"1Gi", 1 << 30, false},
		{"1G", 477 << 21, false}, // 10^9 rounded up to 2 MiB
		{"500Mi", 500 << 20, false},
		{"0", 0, true},
		{"-5", 0, true},
		{"", 0, true},
		{"lots", 0, true},
		{"1.5m", 0, true}, // not a whole number of bytes
		{"1.5Gi", 1610612736, false},
		{"0.5Ki", 2 << 20, false},
		{"1.1", 0, true},
		{"9Ei", 0, true}, // over 2^63
		{"1e3", 2 << 20, false},
	}
	for _, tc := range cases {
		n, err := ParseSize("spec.size", tc.in)
		if tc.wantErr {
			if err == nil || !strings.HasPrefix(err.Error(), "spec.size: ") {
				t.Errorf("ParseSize(%q) = %d, %v; want an error naming spec.size", tc.in, n, err)
			}
			continue
		}
		if err != nil || RoundUpSize(n) != tc.want {
			t.Errorf("ParseSize(%q) rounded = %d (%v), want %d", tc.in, RoundUpSize(n), err, tc.want)
		}
	}
}

func TestNormalizeVolumeSize(t *testing.T) {
	raw := []byte(`{"metadata":{"name":"v"},"spec":{"size":"1Gi","numberOfReplicas":3}}`)
	out, ops, err := normalizeVolumeSize(raw)
	if err != nil {
		t.Fatal(err)
	}
	var v longhorn.Volume
	if err := json.Unmarshal(out, &v); err != nil || v.Spec.Size != 1<<30 {
		t.Fatalf("normalized %s: %v %d", out, err, v.Spec.Size)
	}
	if len(ops) != 1 || ops[0].Path != "/spec/size" || ops[0].Value != "1073741824" {
		t.Fatalf("ops %+v", ops)
	}
	same := []byte(`{"spec":{"size":"1073741824"}}`)
	if out, ops, err := normalizeVolumeSize(same); err != nil || len(ops) != 0 || string(out) != string(same) {
		t.Fatalf("already normalized: %s %v %v", out, ops, err)
	}
	for _, bad := range []string{`{"spec":{"size":true}}`, `{"spec":{"fromBackup":"s3://b?backup=x&volume=v"}}`, `{}`, `[`} {
		if _, _, err := normalizeVolumeSize([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	// No size: Longhorn's mutator rounds 0 up to the 2 MiB minimum.
	out, ops, err = normalizeVolumeSize([]byte(`{"spec":{}}`))
	if err != nil || len(ops) != 1 || ops[0].Value != "2097152" || !strings.Contains(string(out), `"size":"2097152"`) {
		t.Fatalf("no size: %s %+v %v", out, ops, err)
	}
}

func validVolume() *longhorn.Volume {
	v := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "vol-1"}}
	mutated := applyOps(v, mutateVolume(v, true, VolumeDefaults{ReplicaCount: 3, DataLocality: longhorn.DataLocalityDisabled, EngineImage: "longhorn:dev"}))
	mutated.Spec.Size = 1 << 30
	return mutated
}

// applyOps applies add/replace ops on the JSON form (enough for these tests).
func applyOps(v *longhorn.Volume, ops []PatchOp) *longhorn.Volume {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, op := range ops {
		parts := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
		cur := m
		for _, p := range parts[:len(parts)-1] {
			next, ok := cur[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
		last := parts[len(parts)-1]
		if last == "-" {
			continue
		}
		vb, _ := json.Marshal(op.Value)
		var val any
		_ = json.Unmarshal(vb, &val)
		if s, ok := val.(float64); ok && last == "size" {
			val = s
		}
		cur[last] = val
	}
	b, _ = json.Marshal(m)
	out := &longhorn.Volume{}
	_ = json.Unmarshal(b, out)
	return out
}

func TestMutateVolumeDefaults(t *testing.T) {
	v := validVolume()
	s := v.Spec
	if s.NumberOfReplicas != 3 || s.DataLocality != "disabled" || s.Image != "longhorn:dev" || s.DataEngine != "v1" ||
		s.Frontend != "blockdev" || s.AccessMode != "rwo" || s.ReplicaAutoBalance != "ignored" || s.StaleReplicaTimeout != 2880 ||
		s.DiskSelector == nil || s.NodeSelector == nil || v.Labels["longhornvolume"] != "vol-1" || !hasFinalizer(v.Finalizers) {
		t.Fatalf("defaults not applied: %+v %v %v", s, v.Labels, v.Finalizers)
	}
	if ops := mutateVolume(v, true, VolumeDefaults{ReplicaCount: 3}); len(ops) != 0 {
		t.Fatalf("mutating a complete volume again changed %+v", ops)
	}
	v.Spec.NumberOfReplicas = 2
	if ops := mutateVolume(v, true, VolumeDefaults{ReplicaCount: 3}); len(ops) != 0 {
		t.Fatal("an explicit replica count was overridden")
	}
}

func TestValidateVolume(t *testing.T) {
	cases := []struct {
		name      string
		mutate    func(v *longhorn.Volume)
		wantField string // "" = accepted
	}{
		{"valid", func(*longhorn.Volume) {}, ""},
		{"one replica", func(v *longhorn.Volume) { v.Spec.NumberOfReplicas = 1 }, ""},
		{"twenty replicas", func(v *longhorn.Volume) { v.Spec.NumberOfReplicas = 20 }, ""},
		{"21 replicas", func(v *longhorn.Volume) { v.Spec.NumberOfReplicas = 21 }, "spec.numberOfReplicas"},
		{"negative replicas", func(v *longhorn.Volume) { v.Spec.NumberOfReplicas = -1 }, "spec.numberOfReplicas"},
		{"strict-local with 3", func(v *longhorn.Volume) { v.Spec.DataLocality = longhorn.DataLocalityStrictLocal }, "spec.numberOfReplicas"},
		{"strict-local with 1", func(v *longhorn.Volume) {
			v.Spec.DataLocality, v.Spec.NumberOfReplicas = longhorn.DataLocalityStrictLocal, 1
		}, ""},
		{"bad locality", func(v *longhorn.Volume) { v.Spec.DataLocality = "nearby" }, "spec.dataLocality"},
		{"bad access mode", func(v *longhorn.Volume) { v.Spec.AccessMode = "rw" }, "spec.accessMode"},
		{"migratable rwo", func(v *longhorn.Volume) { v.Spec.Migratable = true }, "spec.migratable"},
		{"nbd frontend", func(v *longhorn.Volume) { v.Spec.Frontend = longhorn.VolumeFrontendNBD }, ""},
		{"iscsi frontend", func(v *longhorn.Volume) { v.Spec.Frontend = longhorn.VolumeFrontendISCSI }, ""},
		{"ublk on v1", func(v *longhorn.Volume) { v.Spec.Frontend = longhorn.VolumeFrontendUblk }, "spec.frontend"},
		{"bad engine", func(v *longhorn.Volume) { v.Spec.DataEngine = "v3" }, "spec.dataEngine"},
		{"size not aligned", func(v *longhorn.Volume) { v.Spec.Size = 1<<30 + 1 }, "spec.size"},
		{"bad auto balance", func(v *longhorn.Volume) { v.Spec.ReplicaAutoBalance = "always" }, "spec.replicaAutoBalance"},
		{"bad anti-affinity", func(v *longhorn.Volume) { v.Spec.ReplicaSoftAntiAffinity = "yes" }, "spec.replicaSoftAntiAffinity"},
		{"snapshot count 1", func(v *longhorn.Volume) { v.Spec.SnapshotMaxCount = 1 }, "spec.snapshotMaxCount"},
		{"snapshot count 250", func(v *longhorn.Volume) { v.Spec.SnapshotMaxCount = 250 }, ""},
		{"snapshot size too small", func(v *longhorn.Volume) { v.Spec.SnapshotMaxSize = 1 << 30 }, "spec.snapshotMaxSize"},
		{"empty tag", func(v *longhorn.Volume) { v.Spec.DiskSelector = []string{""} }, "spec.diskSelector[0]"},
		{"empty topology term", func(v *longhorn.Volume) { v.Spec.TopologyRequirement = []longhorn.VolumeTopologyTerm{{}} }, "spec.topologyRequirement[0]"},
		{"backup block size", func(v *longhorn.Volume) { v.Spec.BackupBlockSize = 4096 }, "spec.backupBlockSize"},
		{"sharded", func(v *longhorn.Volume) { v.Spec.DataLayout.Type = longhorn.DataLayoutTypeSharded }, "spec.dataLayout"},
		{"uppercase name", func(v *longhorn.Volume) { v.Name = "Vol" }, "metadata.name"},
		{"long name", func(v *longhorn.Volume) { v.Name = strings.Repeat("a", 41) }, "metadata.name"},
		{"40-char name", func(v *longhorn.Volume) { v.Name = strings.Repeat("a", 40) }, ""},
		{"no image", func(v *longhorn.Volume) { v.Spec.Image = "" }, "spec.image"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := validVolume()
			tc.mutate(v)
			err := validateVolume(v)
			checkField(t, err, tc.wantField)
		})
	}
}

func checkField(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("rejected: %v", err)
		}
		return
	}
	fe, ok := err.(*FieldError)
	if !ok || fe.Field != field || fe.Msg == "" {
		t.Fatalf("error %v, want a FieldError on %s", err, field)
	}
}

func TestValidateVolumeUpdate(t *testing.T) {
	cases := []struct {
		name      string
		mutate    func(v *longhorn.Volume)
		wantField string
	}{
		{"grow", func(v *longhorn.Volume) { v.Spec.Size = 2 << 30 }, ""},
		{"shrink", func(v *longhorn.Volume) { v.Spec.Size = 512 << 20 }, "spec.size"},
		{"replicas to 5", func(v *longhorn.Volume) { v.Spec.NumberOfReplicas = 5 }, ""},
		{"replicas to 0", func(v *longhorn.Volume) { v.Spec.NumberOfReplicas = 0 }, "spec.numberOfReplicas"},
		{"change engine", func(v *longhorn.Volume) { v.Spec.DataEngine = "v2"; v.Spec.Frontend = "nvmf" }, "spec.dataEngine"},
		{"change backing image", func(v *longhorn.Volume) { v.Spec.BackingImage = "bi" }, ""},
		{"change compression", func(v *longhorn.Volume) { v.Spec.BackupCompressionMethod = "gzip" }, "spec.backupCompressionMethod"},
		{"attach", func(v *longhorn.Volume) { v.Spec.NodeID = "n1" }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validVolume()
			old.Spec.BackupCompressionMethod = "lz4"
			v := old.DeepCopy()
			tc.mutate(v)
			checkField(t, validateVolumeUpdate(old, v), tc.wantField)
		})
	}
	old := validVolume()
	old.Spec.BackingImage = "a"
	v := old.DeepCopy()
	v.Spec.BackingImage = "b"
	checkField(t, validateVolumeUpdate(old, v), "spec.backingImage")
}

type stubVolumeStore struct{}

func (stubVolumeStore) VolumeDefaults(longhorn.DataEngineType) (VolumeDefaults, error) {
	return VolumeDefaults{ReplicaCount: 3, DataLocality: longhorn.DataLocalityDisabled, EngineImage: "longhorn:dev"}, nil
}
func (stubVolumeStore) DataEngineEnabled(longhorn.DataEngineType) (bool, error) { return true, nil }
func (stubVolumeStore) Restoring(context.Context, string) (bool, error)         { return false, nil }
func (stubVolumeStore) CloneSource(_ context.Context, volume, snapshot string) (int64, error) {
	if volume != "src" || (snapshot != "" && snapshot != "s1") {
		return 0, Invalid("spec.dataSource", "no source %s/%s", volume, snapshot)
	}
	return 1 << 30, nil
}
func (stubVolumeStore) Expansion(context.Context, *longhorn.Volume) (ExpansionInput, error) {
	return ExpansionInput{}, nil
}

// EngineUpgradeCheck answers from the volume alone, as the datastore does
// for a volume without engine whose new image runs everywhere.
func (stubVolumeStore) EngineUpgradeCheck(_ context.Context, v *longhorn.Volume, image string) (lifecycle.EngineUpgradeCheck, error) {
	return lifecycle.EngineUpgradeCheck{Volume: v.Name, OldImage: v.Spec.Image, CurrentImage: v.Status.CurrentImage, NewImage: image,
		State: lifecycle.VolumeState(v.Status.State), Robustness: lifecycle.Robustness(v.Status.Robustness),
		Frontend: string(v.Spec.Frontend), DisableFrontend: v.Spec.DisableFrontend, Restoring: v.Status.RestoreRequired,
		Expanding: v.Status.ExpansionRequired, NewImageKnown: true}, nil
}

// One name limit with one message, whatever the length: the mutator refuses
// a name over 40 characters itself (the 63-byte label limit of the API
// server is never reached), and the validator says the same.
func TestVolumeNameLimitIsOneMessage(t *testing.T) {
	k := VolumeKind(stubVolumeStore{})
	for _, n := range []int{41, 63, 64, 200} {
		v := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", n)}, Spec: longhorn.VolumeSpec{Size: 1 << 30}}
		req := Request[*longhorn.Volume]{Operation: admissionv1.Create, Object: v}
		_, err := k.Mutate(context.Background(), req)
		want := fmt.Sprintf("metadata.name: volume name %q is %d characters; the limit is 40", v.Name, n)
		if err == nil || err.Error() != want {
			t.Errorf("mutate %d characters: %v, want %q", n, err, want)
		}
		if err := validateVolume(v); err == nil || err.Error() != want {
			t.Errorf("validate %d characters: %v", n, err)
		}
	}
	ok := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 40)}}
	if ops, err := k.Mutate(context.Background(), Request[*longhorn.Volume]{Operation: admissionv1.Create, Object: ok}); err != nil || len(ops) == 0 {
		t.Fatalf("40 characters: %v %v", ops, err)
	}
}
