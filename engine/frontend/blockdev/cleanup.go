package blockdev

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// fuseConnDir is where the fusectl file system lists FUSE connections
// (Documentation/filesystems/fuse.rst, "Control filesystem").
const fuseConnDir = "/sys/fs/fuse/connections"

// Cleanup removes whatever an earlier blockdev frontend of volume left on
// this node: the device node DevDir/<volume>, the kernel device the owner
// record names (a loop device by its tag, an NBD index, an iSCSI session;
// never one found by name only, which on a kernel shared by several test
// clusters may be another's), the FUSE mount FuseDir/<volume>
// (aborted first: its engine may be dead) and the owner record. It is
// idempotent and safe when nothing is left. It does not touch the kernel NBD
// or iSCSI modes' devices of a live engine; for those it disconnects the
// device the owner record names.
//
// Callers: Startup (a stale device never survives a reattach), Shutdown, and
// the instance manager when an engine process exits (CleanupIfOrphaned).
func Cleanup(cfg Config, volume string) error {
	cfg.setDefaults()
	if err := checkVolumeName(volume); err != nil {
		return err
	}
	var errs []error
	node := filepath.Join(cfg.DevDir, volume)
	if err := os.Remove(node); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove %s: %w", node, err))
	}
	if rec, err := readOwner(cfg, volume); err == nil {
		errs = append(errs, disconnectRecorded(rec))
	}
	dir := filepath.Join(cfg.FuseDir, volume)
	if isMountPoint(dir) {
		abortFuse(dir)
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", dir, err))
		}
	}
	_ = os.Remove(dir)
	_ = os.Remove(ownerPath(cfg, volume))
	return errors.Join(errs...)
}

// CleanupIfOrphaned runs Cleanup unless the engine recorded as the owner of
// volume's device is still alive: the instance manager calls it when an
// engine process exits, and a replacement engine may already have made a
// new device.
func CleanupIfOrphaned(cfg Config, volume string) error {
	cfg.setDefaults()
	if rec, err := readOwner(cfg, volume); err == nil && rec.PID > 0 && processAlive(rec.PID) {
		return nil
	}
	return Cleanup(cfg, volume)
}

func processAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// blockRdev returns the device number of a block device node.
func blockRdev(path string) (uint64, bool) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, false
	}
	return st.Rdev, true
}

// mountsAt returns the mounts whose mount point is dir, read from
// /proc/self/mountinfo with github.com/moby/sys/mountinfo; none when the
// table cannot be read.
func mountsAt(dir string) []*mountinfo.Info {
	infos, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) { return m.Mountpoint != dir, false })
	if err != nil {
		return nil
	}
	return infos
}

func isMountPoint(dir string) bool { return len(mountsAt(dir)) > 0 }

// abortFuse aborts the FUSE connection mounted at dir through fusectl
// (mounted here if it is not), so requests waiting on a dead or departing
// daemon fail at once. Best effort: without fusectl nothing happens.
func abortFuse(dir string) {
	for _, m := range mountsAt(dir) {
		if !strings.HasPrefix(m.FSType, "fuse") {
			continue
		}
		abort := filepath.Join(fuseConnDir, strconv.FormatUint(uint64(m.Minor), 10), "abort")
		if _, err := os.Stat(abort); errors.Is(err, os.ErrNotExist) {
			_ = unix.Mount("fusectl", fuseConnDir, "fusectl", 0, "")
		}
		_ = os.WriteFile(abort, []byte("1"), 0)
	}
}
