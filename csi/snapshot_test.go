package csi

import (
	"testing"

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
		{nil, codes.InvalidArgument}, // bak, Longhorn's default: not yet
		{map[string]string{"type": "bak"}, codes.InvalidArgument},
		{map[string]string{"type": "bs"}, codes.InvalidArgument},
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
