package blockdev

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// TestFUSEDeviceLifecycle: a real /dev node over a loop device over the FUSE
// file: raw direct I/O lands in the backend, ext4 formats, mounts and keeps
// a file, an expansion shows at once, and Shutdown leaves nothing behind.
func TestFUSEDeviceLifecycle(t *testing.T) {
	requireFUSE(t)
	testutil.RequireTool(t, "mkfs.ext4")
	cfg, name := testConfig(t), volumeName(t)
	be := newFileBackend(t, 64<<20)
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Startup(context.Background(), name, be.Size(), be); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Shutdown() })
	dev := f.Endpoint()
	if dev != filepath.Join(cfg.DevDir, name) || f.State() != "up" || f.Mode() != ModeFUSE {
		t.Fatalf("endpoint %q state %s mode %s", dev, f.State(), f.Mode())
	}
	if _, ok := blockRdev(dev); !ok {
		t.Fatalf("%s is not a block device", dev)
	}
	dio := filepath.Join("/sys/block", filepath.Base(f.dev.kernelPath()), "loop", "dio")
	if b, err := os.ReadFile(dio); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Fatalf("%s: %q %v, want direct I/O on", dio, b, err)
	}
	p := make([]byte, 1<<20)
	_, _ = rand.Read(p)
	directIO(t, dev, p, 3<<20)
	got := make([]byte, len(p))
	if _, err := be.f.ReadAt(got, 3<<20); err != nil || !bytes.Equal(got, p) {
		t.Fatalf("backend does not hold the written bytes (%v)", err)
	}

	run(t, "mkfs.ext4", "-q", "-F", dev)
	mnt := t.TempDir()
	run(t, "mount", dev, mnt)
	if err := os.WriteFile(filepath.Join(mnt, "hello"), p, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "sync", "-f", mnt)
	if be.flushes == 0 {
		t.Error("sync through the file system sent no flush to the backend")
	}
	run(t, "umount", mnt)

	be.grow(t, 96<<20)
	if err := f.Expand(96 << 20); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(run(t, "blockdev", "--getsize64", dev)); got != strconv.Itoa(96<<20) {
		t.Fatalf("size after expand %s, want %d", got, 96<<20)
	}
	run(t, "e2fsck", "-f", "-n", dev)

	loop := f.dev.kernelPath()
	if err := f.Shutdown(); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, cfg, name, loop)
}

// assertNothingLeft checks that no node, loop, mount or record of volume is left.
func assertNothingLeft(t *testing.T, cfg Config, name, loop string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(cfg.DevDir, name)); !os.IsNotExist(err) {
		t.Errorf("device node left: %v", err)
	}
	waitFor(t, "loop devices of "+name+" to go", func() bool { l, _ := loopsOf(cfg.FuseDir, name); return len(l) == 0 })
	if loop != "" {
		if tag, _ := loopOwner(loop); strings.HasPrefix(tag, loopPrefix(name)) {
			t.Errorf("%s still attached for %s", loop, name)
		}
	}
	if isMountPoint(filepath.Join(cfg.FuseDir, name)) {
		t.Errorf("FUSE mount left at %s", filepath.Join(cfg.FuseDir, name))
	}
	if _, err := os.Stat(ownerPath(cfg, name)); !os.IsNotExist(err) {
		t.Errorf("owner record left: %v", err)
	}
}

// TestDiscardReachesBackend: blkdiscard on the device punches the range in
// the backend (loop -> fallocate(PUNCH_HOLE) -> FUSE -> UnmapAt).
func TestDiscardReachesBackend(t *testing.T) {
	requireFUSE(t)
	testutil.RequireTool(t, "blkdiscard")
	cfg, name := testConfig(t), volumeName(t)
	be := newFileBackend(t, 16<<20)
	f, _ := New(cfg)
	if err := f.Startup(context.Background(), name, be.Size(), be); err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	p := bytes.Repeat([]byte{0xab}, 1<<20)
	directIO(t, f.Endpoint(), p, 0)
	run(t, "blkdiscard", "-o", "0", "-l", strconv.Itoa(1<<20), f.Endpoint())
	got := make([]byte, 1<<20)
	if _, err := be.f.ReadAt(got, 0); err != nil || !bytes.Equal(got, make([]byte, 1<<20)) {
		t.Fatalf("discarded range still holds data (%v)", err)
	}
}
