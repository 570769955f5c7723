package enginetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// Fault tests: replica directories on small filesystems mounted for the
// test (loop-mounted ext4 images, size-limited tmpfs). They need root.

func requireRoot(t *testing.T) {
	t.Helper()
	testutil.RequireTool(t, "mount")
	if os.Geteuid() != 0 {
		if testutil.ToolsRequired() {
			t.Fatal("this test mounts filesystems: run it as root")
		}
		t.Skip("this test mounts filesystems: needs root")
	}
}

// mountFS mounts a filesystem on a fresh directory and unmounts it at cleanup.
func mountFS(t *testing.T, args ...string) string {
	t.Helper()
	mnt := t.TempDir()
	run(t, time.Minute, "mount", append(args, mnt)...)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, out)
		}
	})
	return mnt
}

// ext4Image makes a sparse ext4 image of size bytes.
func ext4Image(t *testing.T, size int64) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	run(t, time.Minute, "mkfs.ext4", "-q", "-F", img)
	return img
}

// qemuIO runs qemu-io commands on uri and fails on any error or pattern
// mismatch; it checks that every command ran.
func qemuIO(t *testing.T, uri string, cmds ...string) {
	t.Helper()
	args := []string{"-f", "raw"}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	out := run(t, time.Minute, "qemu-io", append(args, uri)...)
	ran := strings.Count(out, "wrote ") + strings.Count(out, "read ")
	want := 0
	for _, c := range cmds {
		if strings.HasPrefix(c, "write ") || strings.HasPrefix(c, "read ") {
			want++
		}
	}
	if strings.Contains(out, "failed") || ran != want {
		t.Fatalf("qemu-io %v:\n%s", cmds, out)
	}
}

// TestFlushSurvivesPowerCut: the replicas live on an ext4 image; after
// writes, a snapshot, an expansion and an acknowledged FLUSH the image is
// copied as it is on the "disk" at that moment (what a power cut would
// leave: page cache that was not synced is not in it), then every process is
// killed. Replicas and engine started on the copy serve everything written
// before the flush, the snapshot and the new size. A flush that did not
// fdatasync, or metadata renamed without fsync, loses data here.
func TestFlushSurvivesPowerCut(t *testing.T) {
	requireRoot(t)
	testutilTools(t, "qemu-io")
	testutil.RequireTool(t, "mkfs.ext4")
	const size = 32 << 20
	img := ext4Image(t, 256<<20)
	// commit=600: no periodic journal commit while the image is copied.
	mnt := mountFS(t, "-o", "loop,commit=600", img)
	var reps []*replicaProc
	for i := 0; i < 3; i++ {
		reps = append(reps, startReplica(t, filepath.Join(mnt, fmt.Sprintf("r%d", i)), size))
	}
	e := startEngine(t, "vol", size, reps)
	qemuIO(t, e.uri(), "write -P 0x5a 0 8M", "write -P 0xa5 12M 3M", "flush")
	e.ctl("snapshot", "create", "s1")
	qemuIO(t, e.uri(), "write -P 0x33 1M 1M", "write -P 0x44 20971520 4096", "flush")
	e.ctl("expand", "--size", strconv.Itoa(2*size), "--wait")
	qemuIO(t, e.uri(), "write -P 0x77 "+strconv.Itoa(2*size-4096)+" 4096", "flush")
	// Freeze the processes so nothing writes while the image is copied.
	procs := append([]*proc{e.proc}, func() (ps []*proc) {
		for _, r := range reps {
			ps = append(ps, r.proc)
		}
		return
	}()...)
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGSTOP)
	}
	cut := filepath.Join(t.TempDir(), "cut.img")
	run(t, time.Minute, "cp", "--sparse=always", img, cut)
	for _, p := range procs {
		p.kill()
	}
	mnt2 := mountFS(t, "-o", "loop", cut)
	var reps2 []*replicaProc
	for i := range reps {
		reps2 = append(reps2, startReplica(t, filepath.Join(mnt2, fmt.Sprintf("r%d", i)), 2*size))
	}
	e2 := startEngine(t, "vol", 2*size, reps2)
	qemuIO(t, e2.uri(), "read -P 0x5a 0 1M", "read -P 0x33 1M 1M", "read -P 0x5a 2M 6M", "read -P 0 8M 4M",
		"read -P 0xa5 12M 3M", "read -P 0x44 20971520 4096", "read -P 0x77 "+strconv.Itoa(2*size-4096)+" 4096")
	if m := e2.modes(); len(m) != 3 || m[reps2[0].addr] != "RW" || m[reps2[1].addr] != "RW" || m[reps2[2].addr] != "RW" {
		t.Fatalf("modes after the power cut: %v", m)
	}
	if out := e2.ctl("snapshot", "ls"); !strings.Contains(out, "s1") {
		t.Fatalf("snapshot s1 lost:\n%s", out)
	}
}
