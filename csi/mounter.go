package csi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
