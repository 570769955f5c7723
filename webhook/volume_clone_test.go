package webhook

import (
	"context"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// TestValidateDataSource: Longhorn's two forms only, a source (and
// snapshot) that exists, no smaller than the source, not with fromBackup;
// linked clones are refused as not supported yet; the field is immutable.
func TestValidateDataSource(t *testing.T) {
	cases := []struct {
		name      string
		ds        string
		size      int64
		backup    string
		wantField string
	}{
		{"none", "", 1 << 30, "", ""},
		{"volume", "vol://src", 1 << 30, "", ""},
		{"snapshot", "snap://src/s1", 1 << 30, "", ""},
		{"bigger", "vol://src", 2 << 30, "", ""},
		{"smaller", "vol://src", 512 << 20, "", "spec.size"},
		{"missing volume", "vol://nope", 1 << 30, "", "spec.dataSource"},
		{"missing snapshot", "snap://src/nope", 1 << 30, "", "spec.dataSource"},
		{"snapshot without name", "snap://src", 1 << 30, "", "spec.dataSource"},
		{"volume with path", "vol://src/s1", 1 << 30, "", "spec.dataSource"},
		{"other scheme", "bak://src/b1", 1 << 30, "", "spec.dataSource"},
		{"bare name", "src", 1 << 30, "", "spec.dataSource"},
		{"empty volume", "vol://", 1 << 30, "", "spec.dataSource"},
		{"with backup", "vol://src", 1 << 30, "s3://b@us/?backup=b1&volume=v", "spec.dataSource"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &longhorn.VolumeSpec{DataSource: longhorn.VolumeDataSource(tc.ds), Size: tc.size, FromBackup: tc.backup}
			checkField(t, validateDataSource(context.Background(), stubVolumeStore{}, s), tc.wantField)
		})
	}
	for mode, wantField := range map[longhorn.CloneMode]string{"": "", "full-copy": "", "linked-clone": "spec.cloneMode"} {
		v := validVolume()
		v.Spec.DataSource, v.Spec.CloneMode = "vol://src", mode
		checkField(t, refuseNotSupported(VolumeSpecSupport, "spec.", nil, &v.Spec), wantField)
	}
	old := validVolume()
	old.Spec.DataSource = "vol://src"
	v := old.DeepCopy()
	v.Spec.DataSource = "vol://other"
	checkField(t, validateVolumeUpdate(old, v), "spec.dataSource")
}
