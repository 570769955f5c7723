package csi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	mount "k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"
)

// Mounter is what the node service does to devices and mounts. The host
// implementation runs blkid, mkfs, fsck, mount and resize2fs/xfs_growfs
// through k8s.io/mount-utils; tests of pure logic may replace it.
type Mounter interface {
	mount.Interface
	// DiskFormat is the file system (or partition table) blkid finds on
	// dev, "" when blkid reports the device empty. An I/O error, a timeout
	// or any blkid failure is an error, never "".
	DiskFormat(ctx context.Context, dev string) (string, error)
	// Format runs mkfs.<fsType> with params on dev.
	Format(ctx context.Context, fsType, dev string, params []string) error
	// Check runs the file system's repair-free check before a mount
	// (e2fsck -p for ext4; xfs checks itself at mount).
	Check(ctx context.Context, fsType, dev string) error
	// Resize grows the file system on dev mounted at path to the device size.
	Resize(dev, path string) error
	// NeedResize reports whether the file system on dev (mounted at path)
	// is smaller than the device.
	NeedResize(dev, path string) (bool, error)
	// GrowOffline grows an unmounted ext4 file system that is smaller than
	// its device (a volume expanded while detached): online ext4 growth
	// needs CAP_SYS_RESOURCE, offline growth does not. Other types: nothing.
	GrowOffline(ctx context.Context, fsType, dev string) error
}

// probeTimeout bounds one read of a device before it is trusted as readable.
const probeTimeout = 30 * time.Second

// hostMounter is the Mounter of a real node.
type hostMounter struct {
	mount.Interface
	exec utilexec.Interface
}

// NewHostMounter returns the Mounter of this host.
func NewHostMounter() Mounter {
	return &hostMounter{Interface: mount.New(""), exec: utilexec.New()}
}

// readProbe reads the first and last 64 KiB of dev with O_DIRECT within
// probeTimeout: a device that cannot be read is never judged empty.
func readProbe(ctx context.Context, dev string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- readEnds(dev) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("reading %s did not finish within %s", dev, probeTimeout)
	}
}

func readEnds(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	size, err := f.Seek(0, 2)
	if err != nil {
		return fmt.Errorf("size of %s: %w", dev, err)
	}
	buf, err := unix.Mmap(-1, 0, 64<<10, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer unix.Munmap(buf)
	for _, off := range []int64{0, max(0, size-int64(len(buf)))} {
		n := min(int64(len(buf)), size-off)
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return fmt.Errorf("read %s at %d: %w", dev, off, err)
		}
	}
	return nil
}

// DiskFormat: the device must be readable before and after blkid, and
// blkid must exit 0 (a format found) or 2 (nothing found); anything else
// is an error (Longhorn bug #14042: a transient error must never make an
// existing file system look empty).
func (m *hostMounter) DiskFormat(ctx context.Context, dev string) (string, error) {
	if err := readProbe(ctx, dev); err != nil {
		return "", fmt.Errorf("device %s is not readable, not probing it for a file system: %w", dev, err)
	}
	ctx2, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx2, "blkid", "-p", "-s", "TYPE", "-s", "PTTYPE", "-o", "export", dev).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 2 && ctx2.Err() == nil:
		if err := readProbe(ctx, dev); err != nil {
			return "", fmt.Errorf("device %s became unreadable while probing: %w", dev, err)
		}
		return "", nil
	case err != nil:
		return "", fmt.Errorf("blkid %s: %w: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return parseBlkid(string(out))
}

// parseBlkid reads `blkid -o export` output: TYPE=ext4, or a partition
// table (PTTYPE=...), which is reported as "partitions" (never formatted).
func parseBlkid(out string) (string, error) {
	var fs, pt string
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		switch {
		case !ok:
			continue
		case k == "TYPE":
			fs = v
		case k == "PTTYPE":
			pt = v
		}
	}
	if pt != "" {
		return "partitions (" + pt + ")", nil
	}
	if fs == "" {
		return "", errors.New("blkid reported success but no TYPE")
	}
	return fs, nil
}

func (m *hostMounter) Format(ctx context.Context, fsType, dev string, params []string) error {
	args := append([]string{}, params...)
	switch fsType {
	case "ext4":
		args = append(args, "-F", dev)
	case "xfs":
		args = append(args, "-f", dev)
	default:
		return fmt.Errorf("fsType %q: want ext4 or xfs", fsType)
	}
	out, err := exec.CommandContext(ctx, "mkfs."+fsType, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.%s %s: %w: %s", fsType, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Check runs e2fsck -p on ext4 (exit 1: errors corrected; 2: corrected,
// reboot advised; both fine to mount; 4 and above: refuse to mount).
func (m *hostMounter) Check(ctx context.Context, fsType, dev string) error {
	if !strings.HasPrefix(fsType, "ext") {
		return nil
	}
	out, err := exec.CommandContext(ctx, "e2fsck", "-p", dev).CombinedOutput()
	var ee *exec.ExitError
	if err == nil || (errors.As(err, &ee) && ee.ExitCode() < 4) {
		return nil
	}
	return fmt.Errorf("e2fsck -p %s found errors it could not correct: %w: %s", dev, err, strings.TrimSpace(string(out)))
}

func (m *hostMounter) Resize(dev, path string) error {
	_, err := mount.NewResizeFs(m.exec).Resize(dev, path)
	return err
}

// deviceSize returns the size in bytes of a block device (or regular file).
func deviceSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Seek(0, 2)
}

// NeedResize: for ext4, the file system (dumpe2fs -h: block count times
// block size) is smaller than the device by more than a block; xfs is left
// to xfs_growfs, which finds out itself.
func (m *hostMounter) NeedResize(dev, path string) (bool, error) {
	out, err := exec.Command("dumpe2fs", "-h", dev).Output()
	if err != nil {
		return mount.NewResizeFs(m.exec).NeedResize(dev, path)
	}
	blocks, bsize, err := parseDumpe2fs(string(out))
	if err != nil {
		return false, err
	}
	size, err := deviceSize(dev)
	if err != nil {
		return false, err
	}
	return size > blocks*bsize+bsize, nil
}

// parseDumpe2fs reads "Block count:" and "Block size:" from dumpe2fs -h.
func parseDumpe2fs(out string) (blocks, bsize int64, err error) {
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch strings.TrimSpace(k) {
		case "Block count":
			blocks, err = n, perr
		case "Block size":
			bsize, err = n, perr
		}
		if err != nil {
			return 0, 0, fmt.Errorf("dumpe2fs: %q: %w", l, err)
		}
	}
	if blocks <= 0 || bsize <= 0 {
		return 0, 0, errors.New("dumpe2fs printed no block count and size")
	}
	return blocks, bsize, nil
}

func (m *hostMounter) GrowOffline(ctx context.Context, fsType, dev string) error {
	if fsType != "ext4" {
		return nil
	}
	need, err := m.NeedResize(dev, "")
	if err != nil || !need {
		return err
	}
	if out, err := exec.CommandContext(ctx, "e2fsck", "-f", "-p", dev).CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() >= 4 {
			return fmt.Errorf("e2fsck -f -p %s before growing: %w: %s", dev, err, strings.TrimSpace(string(out)))
		}
	}
	if out, err := exec.CommandContext(ctx, "resize2fs", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("resize2fs %s: %w: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// capSysResource is bit 24 of the effective capabilities (linux/capability.h).
const capSysResource = 24

// HasCapSysResource reports whether this process may grow a mounted ext4
// file system (the EXT4_IOC_RESIZE_FS ioctl wants CAP_SYS_RESOURCE).
func HasCapSysResource() bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<capSysResource) != 0
		}
	}
	return false
}
