package framework

import (
	"os"
	"path/filepath"
	"testing"
)

func TestResolveIn(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "run/longhorn/nbd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "var"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/run", filepath.Join(root, "var/run")); err != nil { // as in Debian images
		t.Fatal(err)
	}
	if err := os.Symlink("../run", filepath.Join(root, "var/rel")); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"/var/run/longhorn/nbd/v.sock": "/run/longhorn/nbd/v.sock",
		"/var/rel/longhorn/nbd/v.sock": "/run/longhorn/nbd/v.sock",
		"/run/longhorn/nbd/v.sock":     "/run/longhorn/nbd/v.sock",
		"/nothere/x.sock":              "/nothere/x.sock",
	} {
		if got := resolveIn(root, in); got != want {
			t.Errorf("resolveIn(%s) = %s, want %s", in, got, want)
		}
	}
}
