package fstrim

import (
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// A mount table with the volume's filesystem (7:3) mounted twice (a mount
// and a bind mount of a subdirectory), another loop device and a tmpfs.
const sampleMountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:25 / /tmp rw,nosuid shared:5 - tmpfs tmpfs rw
41 22 7:3 / /var/lib/kubelet/plugins/kubernetes.io/csi/driver.longhorn.io/abc/globalmount rw,relatime shared:20 - ext4 /dev/longhorn/vol-a rw
42 22 7:3 /data /var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/pvc-1/mount rw,relatime shared:20 - ext4 /dev/longhorn/vol-a rw
43 22 7:4 / /mnt/other rw,relatime shared:21 - xfs /dev/loop4 rw
44 22 7:3 / /var/lib/kubelet/plugins/kubernetes.io/csi/driver.longhorn.io/abc/globalmount rw,relatime shared:20 - ext4 /dev/longhorn/vol-a rw
`

func TestMountPoints(t *testing.T) {
	m, err := parse(strings.NewReader(sampleMountinfo), "sample")
	if err != nil {
		t.Fatal(err)
	}
	got := MountPoints(m, 7, 3)
	want := []string{"/var/lib/kubelet/plugins/kubernetes.io/csi/driver.longhorn.io/abc/globalmount",
		"/var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/pvc-1/mount"}
	if !slices.Equal(got, want) {
		t.Fatalf("mount points of 7:3: %q, want %q", got, want)
	}
	if got := MountPoints(m, 7, 9); len(got) != 0 {
		t.Fatalf("mount points of an unmounted device: %q", got)
	}
}

func TestTrimRefusals(t *testing.T) {
	h := Host{DevDir: t.TempDir()}
	for _, v := range []string{"", "../x", "a/b", "..", "."} {
		if _, err := h.Trim(v); err == nil || !strings.Contains(err.Error(), "single path element") {
			t.Errorf("volume %q: %v", v, err)
		}
	}
	if _, err := h.Trim("gone"); err == nil || !strings.Contains(err.Error(), "no block device") {
		t.Errorf("missing device: %v", err)
	}
	if err := os.WriteFile(filepath.Join(h.DevDir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Trim("file"); err == nil || !strings.Contains(err.Error(), "not a block device") {
		t.Errorf("regular file: %v", err)
	}
}

func TestHostPath(t *testing.T) {
	if p := (Host{ProcRoot: "/host/proc"}).hostPath("/mnt/x"); p != "/host/proc/1/root/mnt/x" {
		t.Fatalf("host path %s", p)
	}
	if p := (Host{}).hostPath("/mnt/x"); p != "/mnt/x" {
		t.Fatalf("own path %s", p)
	}
}

// TestTrimLoopFilesystem trims a real ext4 on a loop device: a deleted
// file's blocks come back to the loop's sparse backing file (the loop
// driver punches discarded ranges), so its allocation drops by about the
// file's size; an unmounted device is refused with ErrNotMounted.
func TestTrimLoopFilesystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (loop devices, mount)")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4"} {
		testutil.RequireTool(t, tool)
	}
	dir := t.TempDir()
	backing := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(backing, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, 128<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", backing).CombinedOutput()
	if err != nil {
		t.Skipf("losetup: %v %s", err, out)
	}
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", loop).Run() })
	if out, err := exec.Command("mkfs.ext4", "-q", "-E", "nodiscard", loop).CombinedOutput(); err != nil {
		t.Fatalf("mkfs: %v %s", err, out)
	}
	var st unix.Stat_t
	if err := unix.Stat(loop, &st); err != nil {
		t.Fatal(err)
	}
	devDir := filepath.Join(dir, "dev")
	if err := os.MkdirAll(devDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(devDir, "vol"), unix.S_IFBLK|0o600, int(st.Rdev)); err != nil {
		t.Fatal(err)
	}
	h := Host{DevDir: devDir}
	if _, err := h.Trim("vol"); !errors.Is(err, ErrNotMounted) {
		t.Fatalf("trim of an unmounted device: %v", err)
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(loop, mnt, "ext4", 0, ""); err != nil {
		t.Skipf("mount ext4: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	data := make([]byte, 32<<20)
	_, _ = rand.Read(data)
	if err := os.WriteFile(filepath.Join(mnt, "f"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	unix.Sync()
	full := allocated(t, backing)
	if err := os.Remove(filepath.Join(mnt, "f")); err != nil {
		t.Fatal(err)
	}
	unix.Sync()
	res, err := h.Trim("vol")
	if err != nil {
		t.Fatal(err)
	}
	after := allocated(t, backing)
	t.Logf("MEASURE trim of ext4 with a deleted 32 MiB file: %d bytes trimmed, backing file %d -> %d bytes allocated", res.Trimmed, full, after)
	if res.MountPoint != mnt || res.Trimmed < 32<<20 || full-after < 30<<20 {
		t.Fatalf("trim at %s: %d bytes trimmed, allocation %d -> %d; want %s, >= 32 MiB and a 30 MiB drop", res.MountPoint, res.Trimmed, full, after, mnt)
	}
}

func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}
