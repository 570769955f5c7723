// Package fstrim trims the filesystem mounted from a volume's block device
// on this node: what Longhorn's trimFilesystem volume action does on the
// node the volume is attached to (longhorn-manager util.TrimFilesystem:
// find the mount point of /dev/longhorn/<volume> in the host's mount table,
// run fstrim on it). The filesystem then discards its unused blocks; the
// blockdev frontend turns the discards into UNMAP requests to the engine,
// and the replicas punch those ranges out of their volume head (and of the
// removed snapshots below it), so their actual size drops.
//
// Instead of running fstrim(8) through nsenter, Trim issues the FITRIM
// ioctl itself (linux/fs.h; what fstrim does) on the mount point reached
// through the host's root (/host/proc/1/root in the manager pod), so the
// manager image needs neither tool.
package fstrim

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unsafe"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// fitrim is FITRIM, _IOWR('X', 121, struct fstrim_range) (linux/fs.h).
const fitrim = 0xC0185879

// fstrimRange is struct fstrim_range: the byte range to trim, the minimum
// free extent to discard; the kernel writes the bytes trimmed into Len.
type fstrimRange struct {
	Start, Len, MinLen uint64
}

// Host is this node as the manager sees it.
type Host struct {
	// DevDir is the node's /dev/longhorn as this process sees it (the
	// manager pod mounts the host's /dev at /host/dev).
	DevDir string
	// ProcRoot is the host's /proc as this process sees it ("/host/proc" in
	// the manager pod): the mount table is the one of the host's PID 1, and
	// paths are reached through its root. "" means this process's own mount
	// namespace (a manager run on the host).
	ProcRoot string
}

// DefaultHost is the manager's view of its node: /host/dev/longhorn and
// /host/proc when the manager pod mounts them, else /dev/longhorn and this
// process's namespace. devDir, when not "", replaces the device directory.
func DefaultHost(devDir string) Host {
	h := Host{DevDir: "/dev/longhorn"}
	if _, err := os.Stat("/host/proc/1/mountinfo"); err == nil {
		h.ProcRoot = "/host/proc"
		if _, err := os.Stat("/host/dev"); err == nil {
			h.DevDir = "/host/dev/longhorn"
		}
	}
	if devDir != "" {
		h.DevDir = devDir
	}
	return h
}

// Result is one trim: the mount point trimmed (as the host names it) and
// the bytes the filesystem discarded.
type Result struct {
	MountPoint string
	Trimmed    uint64
}

// ErrNotMounted says the volume's device has no mounted filesystem here.
var ErrNotMounted = errors.New("no mounted filesystem")

// Trim trims the filesystem mounted from volume's device DevDir/<volume>:
// the first of its mount points (sorted) that can be opened. Errors name
// the volume: no device node (the volume is not attached here with a block
// device), ErrNotMounted, or the ioctl's error (EOPNOTSUPP: the filesystem
// or the device does not discard).
func (h Host) Trim(volume string) (Result, error) {
	if volume == "" || strings.ContainsAny(volume, "/\x00") || volume == "." || volume == ".." {
		return Result{}, fmt.Errorf("volume name %q: want a single path element", volume)
	}
	dev := filepath.Join(h.DevDir, volume)
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		return Result{}, fmt.Errorf("volume %s: no block device %s on this node: %w", volume, dev, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return Result{}, fmt.Errorf("volume %s: %s is not a block device", volume, dev)
	}
	mounts, err := h.mounts()
	if err != nil {
		return Result{}, err
	}
	points := MountPoints(mounts, int(unix.Major(st.Rdev)), int(unix.Minor(st.Rdev)))
	if len(points) == 0 {
		return Result{}, fmt.Errorf("volume %s: %w of device %s (%d:%d) on this node", volume, ErrNotMounted, dev,
			unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	var errs []error
	for _, p := range points {
		n, err := trimPath(h.hostPath(p))
		if err == nil {
			return Result{MountPoint: p, Trimmed: n}, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", p, err))
	}
	return Result{}, fmt.Errorf("volume %s: trim: %w", volume, errors.Join(errs...))
}

// mounts reads the mount table of the host (or of this process).
func (h Host) mounts() ([]*mountinfo.Info, error) {
	path := "/proc/self/mountinfo"
	if h.ProcRoot != "" {
		path = filepath.Join(h.ProcRoot, "1", "mountinfo")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mount table: %w", err)
	}
	defer f.Close()
	return parse(f, path)
}

func parse(r io.Reader, name string) ([]*mountinfo.Info, error) {
	m, err := mountinfo.GetMountsFromReader(r, nil)
	if err != nil {
		return nil, fmt.Errorf("mount table %s: %w", name, err)
	}
	return m, nil
}

// hostPath is where this process reaches the host's path p.
func (h Host) hostPath(p string) string {
	if h.ProcRoot == "" {
		return p
	}
	return filepath.Join(h.ProcRoot, "1", "root", p)
}

// MountPoints returns, sorted and without duplicates, the mount points of
// the filesystems whose device number is major:minor (a filesystem mounted
// from that block device, and its bind mounts).
func MountPoints(mounts []*mountinfo.Info, major, minor int) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range mounts {
		if m.Major == major && m.Minor == minor && !seen[m.Mountpoint] {
			seen[m.Mountpoint] = true
			out = append(out, m.Mountpoint)
		}
	}
	sort.Strings(out)
	return out
}

// trimPath issues FITRIM over the whole filesystem mounted at path and
// returns the bytes discarded.
func trimPath(path string) (uint64, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	r := fstrimRange{Start: 0, Len: math.MaxUint64, MinLen: 0}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fitrim, uintptr(unsafe.Pointer(&r))); errno != 0 {
		return 0, fmt.Errorf("FITRIM: %w", errno)
	}
	return r.Len, nil
}
