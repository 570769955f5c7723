package monitor

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestEnsureDiskConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "disk")
	if _, err := ReadDiskConfig(dir); !errors.Is(err, ErrNoDiskConfig) {
		t.Fatalf("ReadDiskConfig on a fresh dir: %v", err)
	}
	cfg, err := EnsureDiskConfig(dir, "default-disk-1")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(cfg.DiskUUID) {
		t.Fatalf("UUID %q is not a v4 UUID", cfg.DiskUUID)
	}
	if st, err := os.Stat(filepath.Join(dir, ReplicaDirectory)); err != nil || !st.IsDir() {
		t.Fatalf("replicas dir: %v", err)
	}
	again, err := EnsureDiskConfig(dir, "renamed")
	if err != nil || again.DiskUUID != cfg.DiskUUID || again.DiskName != "renamed" {
		t.Fatalf("second ensure = %+v, %v; want same UUID, new name", again, err)
	}
	read, err := ReadDiskConfig(dir)
	if err != nil || read != again {
		t.Fatalf("ReadDiskConfig = %+v, %v", read, err)
	}
	if err := os.WriteFile(filepath.Join(dir, DiskConfigFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDiskConfig(dir); err == nil || errors.Is(err, ErrNoDiskConfig) {
		t.Fatalf("corrupt config: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, DiskConfigFile), []byte(`{"diskName":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDiskConfig(dir); err == nil {
		t.Fatal("config without UUID accepted")
	}
}

func TestStatDisk(t *testing.T) {
	dir := t.TempDir()
	st, err := StatDisk(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.StorageMaximum <= 0 || st.StorageAvailable < 0 || st.StorageAvailable > st.StorageMaximum || st.FSType == "" || st.FSID == "" {
		t.Fatalf("implausible stat %+v", st)
	}
	if _, err := StatDisk(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("stat of a missing path succeeded")
	}
}

func TestReplicaDataDirectories(t *testing.T) {
	dir := t.TempDir()
	if names, err := ReplicaDataDirectories(dir); err != nil || len(names) != 0 {
		t.Fatalf("no replicas dir: %v %v", names, err)
	}
	for _, n := range []string{"vol-aaaa0000", "vol-bbbb0000"} {
		if err := os.MkdirAll(filepath.Join(dir, ReplicaDirectory, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	names, err := ReplicaDataDirectories(dir)
	if err != nil || len(names) != 2 {
		t.Fatalf("got %v %v", names, err)
	}
}
