package csi

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestSnapshotType(t *testing.T) {
	for _, c := range []struct {
		params map[string]string
		code   codes.Code
	}{
		{map[string]string{"type": "snap"}, codes.OK},
		{map[string]string{"type": "snap", "csi.storage.k8s.io/snapshotter-secret-name": "x"}, codes.OK},
		{nil, codes.OK}, // bak, Longhorn's default
		{map[string]string{"type": "bak"}, codes.OK},
		{map[string]string{"type": "bs"}, codes.OK},
		{map[string]string{"type": "bak", "backupMode": "incremental"}, codes.OK},
		{map[string]string{"type": "bak", "backupMode": "sometimes"}, codes.InvalidArgument},
		{map[string]string{"type": "bak", "exportType": "raw"}, codes.InvalidArgument},
		{map[string]string{"type": "bi"}, codes.InvalidArgument},
		{map[string]string{"type": "weird"}, codes.InvalidArgument},
		{map[string]string{"type": "snap", "backupMode": "full"}, codes.InvalidArgument},
		{map[string]string{"type": "snap", "colour": "red"}, codes.InvalidArgument},
	} {
		_, err := snapshotType(c.params)
		if status.Code(err) != c.code {
			t.Errorf("snapshotType(%v) = %v, want %v", c.params, err, c.code)
		}
	}
}

func TestParseBackupID(t *testing.T) {
	if v, b, ok := ParseBackupID(BackupID("pvc-1", "backup-0123")); !ok || v != "pvc-1" || b != "backup-0123" {
		t.Fatalf("round trip: %q %q %v", v, b, ok)
	}
	for _, id := range []string{"", "bak://", "bak://v", "bak://v/", "bak:///b", "snap://v/s", "bak://v/b/x"} {
		if _, _, ok := ParseBackupID(id); ok {
			t.Errorf("ParseBackupID(%q) accepted", id)
		}
	}
}

func TestParseSnapshotID(t *testing.T) {
	if v, s, ok := ParseSnapshotID(SnapshotID("pvc-1", "snapshot-2")); !ok || v != "pvc-1" || s != "snapshot-2" {
		t.Fatalf("round trip: %q %q %v", v, s, ok)
	}
	for _, id := range []string{"", "snap://", "snap://v", "snap://v/", "snap:///s", "bak://v/b", "snap://v/s/x", "v/s"} {
		if _, _, ok := ParseSnapshotID(id); ok {
			t.Errorf("ParseSnapshotID(%q) accepted", id)
		}
	}
}

func FuzzParseSnapshotID(f *testing.F) {
	for _, s := range []string{"snap://v/s", "snap://", "bak://v/b", "snap://a/b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		v, s, ok := ParseSnapshotID(id)
		if ok && SnapshotID(v, s) != id {
			t.Fatalf("%q parsed to %q %q, which prints %q", id, v, s, SnapshotID(v, s))
		}
	})
}

// A clone is the source's size unless a larger one is required; smaller
// is OutOfRange. Publishing waits (Unavailable) until the clone completed.
func TestCloneSizeAndPublishGate(t *testing.T) {
	cases := []struct {
		req, lim, rounded, src, want int64
		code                         codes.Code
	}{
		{0, 0, 2 << 30, 64 << 20, 64 << 20, codes.OK},
		{64 << 20, 0, 64 << 20, 64 << 20, 64 << 20, codes.OK},
		{128 << 20, 0, 128 << 20, 64 << 20, 128 << 20, codes.OK},
		{32 << 20, 0, 32 << 20, 64 << 20, 0, codes.OutOfRange},
		{0, 32 << 20, 32 << 20, 64 << 20, 0, codes.OutOfRange},
	}
	for _, tc := range cases {
		got, err := cloneSize(&csi.CapacityRange{RequiredBytes: tc.req, LimitBytes: tc.lim}, tc.rounded, tc.src)
		if status.Code(err) != tc.code || got != tc.want {
			t.Errorf("cloneSize(req %d lim %d, src %d) = %d, %v; want %d %s", tc.req, tc.lim, tc.src, got, err, tc.want, tc.code)
		}
	}
	for st, want := range map[string]codes.Code{"": codes.Unavailable, "initiated": codes.Unavailable, "failed": codes.Unavailable, "completed": codes.OK} {
		v := &Volume{Name: "c", DataSource: "vol://src", CloneStatus: CloneStatus{State: st}}
		if err := cloneDone(v); status.Code(err) != want {
			t.Errorf("clone %q: %v, want %s", st, err, want)
		}
	}
	if err := cloneDone(&Volume{Name: "plain"}); err != nil {
		t.Errorf("a volume without a data source: %v", err)
	}
}
