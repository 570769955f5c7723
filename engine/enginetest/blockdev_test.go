package enginetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"google.golang.org/protobuf/types/known/emptypb"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// startBlockdevEngine starts `longhorn engine controller --frontend blockdev`
// with its device node and state in test directories and waits for the
// endpoint.
func startBlockdevEngine(t *testing.T, vol string, size int64, devDir, stateDir string, reps []*replicaProc) (*engineProc, string) {
	t.Helper()
	e := &engineProc{vol: vol, url: "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))}
	args := []string{"engine", "controller", vol, "--size", strconv.FormatInt(size, 10), "--listen", e.url,
		"--frontend", "blockdev", "--blockdev-mode", "fuse", "--blockdev-dev-dir", devDir, "--blockdev-state-dir", stateDir}
	for _, r := range reps {
		args = append(args, "--replica", r.addr)
	}
	e.proc = startProc(t, "engine-"+vol, args...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := e.api().VolumeGet(context.Background(), &emptypb.Empty{})
		if err == nil && v.GetFrontendState() == "up" {
			return e, v.GetEndpoint()
		}
		if e.exited() || time.Now().After(deadline) {
			t.Fatalf("engine not ready: %v %v\n%s", v, err, e.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBlockdevFrontendExt4 runs the blockdev frontend in a real engine over
// two real replicas: ext4 on /dev/longhorn/<vol>, a file written, the engine
// killed with -9, a new engine on the same replicas (the stale device is
// replaced), the file read back, and SIGTERM leaves no device behind.
func TestBlockdevFrontendExt4(t *testing.T) {
	requireRoot(t)
	testutil.RequireTool(t, "mkfs.ext4")
	const size = 128 << 20
	reps := []*replicaProc{startReplica(t, filepath.Join(t.TempDir(), "r1"), size), startReplica(t, filepath.Join(t.TempDir(), "r2"), size)}
	devDir, stateDir := filepath.Join(t.TempDir(), "dev"), filepath.Join(t.TempDir(), "state")
	vol := "bd-" + strconv.Itoa(os.Getpid())
	e, dev := startBlockdevEngine(t, vol, size, devDir, stateDir, reps)
	if dev != filepath.Join(devDir, vol) {
		t.Fatalf("endpoint %q, want %s", dev, filepath.Join(devDir, vol))
	}
	run(t, 30*time.Second, "mkfs.ext4", "-q", "-F", dev)
	mnt := t.TempDir()
	run(t, 10*time.Second, "mount", dev, mnt)
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	want := sha256.Sum256(data)
	if err := os.WriteFile(filepath.Join(mnt, "data.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, 10*time.Second, "umount", mnt)

	e.kill()
	e2, dev2 := startBlockdevEngine(t, vol, size, devDir, stateDir, reps)
	run(t, 30*time.Second, "e2fsck", "-f", "-n", dev2)
	run(t, 10*time.Second, "mount", dev2, mnt)
	got, err := os.ReadFile(filepath.Join(mnt, "data.bin"))
	run(t, 10*time.Second, "umount", mnt)
	if err != nil || sha256.Sum256(got) != want {
		t.Fatalf("after engine kill and reattach: %v, sha256 %s", err, hex.EncodeToString(want[:4]))
	}
	e2.stop()
	if _, err := os.Lstat(dev2); !os.IsNotExist(err) {
		t.Fatalf("device node left after the engine stopped: %v", err)
	}
	entries, _ := os.ReadDir(stateDir)
	for _, en := range entries {
		if en.Name() != vol+".lock" {
			t.Errorf("state left after the engine stopped: %s", en.Name())
		}
	}
}
