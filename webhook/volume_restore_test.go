package webhook

import (
	"context"
	"strings"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// spec.fromBackup: Longhorn's backup URL with an s3/nfs/vfs target is
// accepted; a URL without a backup or volume, with a bad name or another
// scheme is refused naming the field; standby needs fromBackup and no
// frontend.
func TestVolumeFromBackup(t *testing.T) {
	cases := []struct {
		name     string
		edit     func(*longhorn.VolumeSpec)
		field    string
		contains string
	}{
		{"s3", func(s *longhorn.VolumeSpec) { s.FromBackup = "s3://bucket@us-east-1/?backup=backup-1&volume=vol1" }, "", ""},
		{"nfs", func(s *longhorn.VolumeSpec) { s.FromBackup = "nfs://10.0.0.1:/export?backup=backup-1&volume=vol1" }, "", ""},
		{"vfs", func(s *longhorn.VolumeSpec) { s.FromBackup = "vfs:///var/backups?backup=backup-1&volume=vol1" }, "", ""},
		{"no backup", func(s *longhorn.VolumeSpec) { s.FromBackup = "s3://bucket@us-east-1/?volume=vol1" }, "spec.fromBackup", "names no backup"},
		{"no volume", func(s *longhorn.VolumeSpec) { s.FromBackup = "s3://bucket@us-east-1/?backup=b" }, "spec.fromBackup", "want <target>"},
		{"bad name", func(s *longhorn.VolumeSpec) { s.FromBackup = "s3://b@r/?backup=a/../b&volume=vol1" }, "spec.fromBackup", "backup"},
		{"no scheme", func(s *longhorn.VolumeSpec) { s.FromBackup = "bucket/?backup=b&volume=vol1" }, "spec.fromBackup", "s3://"},
		{"cifs", func(s *longhorn.VolumeSpec) { s.FromBackup = "cifs://srv/share?backup=bk&volume=vol1" }, "spec.fromBackup", "not supported"},
		{"standby", func(s *longhorn.VolumeSpec) {
			s.FromBackup, s.Standby, s.Frontend = "s3://bucket@us-east-1/?backup=backup-1&volume=vol1", true, ""
		}, "", ""},
		{"standby without backup", func(s *longhorn.VolumeSpec) { s.Standby, s.Frontend = true, "" }, "spec.Standby", "fromBackup"},
		{"standby with frontend", func(s *longhorn.VolumeSpec) {
			s.FromBackup, s.Standby, s.Frontend = "s3://bucket@us-east-1/?backup=backup-1&volume=vol1", true, longhorn.VolumeFrontendBlockDev
		}, "spec.frontend", "standby"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := validVolume()
			tc.edit(&v.Spec)
			err := validateVolume(v)
			checkField(t, err, tc.field)
			if tc.contains != "" && !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("error %q does not say %q", err, tc.contains)
			}
		})
	}
}

// fromBackup is immutable and a normal volume cannot become standby;
// activation (standby true -> false with a frontend) is a valid update.
func TestVolumeFromBackupUpdate(t *testing.T) {
	old := validVolume()
	old.Spec.FromBackup, old.Spec.Standby, old.Spec.Frontend = "s3://bucket@us-east-1/?backup=backup-1&volume=vol1", true, ""
	v := old.DeepCopy()
	v.Spec.FromBackup = "s3://bucket@us-east-1/?backup=backup-2&volume=vol1"
	checkField(t, validateVolumeUpdate(old, v), "spec.fromBackup")
	v = old.DeepCopy()
	v.Spec.Standby, v.Spec.Frontend = false, longhorn.VolumeFrontendBlockDev
	checkField(t, validateVolumeUpdate(old, v), "")
	normal := validVolume()
	v = normal.DeepCopy()
	v.Spec.Standby, v.Spec.Frontend, v.Spec.FromBackup = true, "", old.Spec.FromBackup
	checkField(t, validateVolumeUpdate(normal, v), "spec.Standby")
}

// restoringStore says every volume restores a backup.
type restoringStore struct{ stubVolumeStore }

func (restoringStore) Restoring(context.Context, string) (bool, error) { return true, nil }

// activate (standby true -> false) is refused while a replica restores a
// backup, naming spec.Standby; allowed once the restore is done; a volume
// that was not standby is not asked about.
func TestActivationRefusedWhileRestoring(t *testing.T) {
	old := validVolume()
	old.Spec.FromBackup, old.Spec.Standby, old.Spec.Frontend = "s3://bucket@us-east-1/?backup=backup-1&volume=vol1", true, ""
	v := old.DeepCopy()
	v.Spec.Standby, v.Spec.Frontend = false, longhorn.VolumeFrontendBlockDev
	err := checkActivation(context.Background(), restoringStore{}, old, v)
	checkField(t, err, "spec.Standby")
	if !strings.Contains(err.Error(), "while it restores") {
		t.Fatalf("refusal %q does not say why", err)
	}
	checkField(t, checkActivation(context.Background(), stubVolumeStore{}, old, v), "")
	normal := validVolume()
	checkField(t, checkActivation(context.Background(), restoringStore{}, normal, normal.DeepCopy()), "")
}
