package monitor

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// MountInfoFile is where the kernel lists the mounts of this process's
// mount namespace (proc(5), /proc/pid/mountinfo).
const MountInfoFile = "/proc/self/mountinfo"

// Mount is one line of mountinfo: the mount point and whether it propagates
// mounts to peers (an optional field "shared:N").
type Mount struct {
	MountPoint string
	Shared     bool
}

// ParseMountInfo reads mountinfo lines ("36 35 98:0 /mnt1 /mnt2 rw,noatime
// master:1 shared:2 - ext3 /dev/root rw", proc(5)) with
// github.com/moby/sys/mountinfo: the mount point (octal escapes decoded) and
// whether the optional fields hold "shared:N". A malformed line is an error
// quoting it.
func ParseMountInfo(r io.Reader) ([]Mount, error) {
	infos, err := mountinfo.GetMountsFromReader(r, nil)
	if err != nil {
		return nil, fmt.Errorf("mountinfo: %w", err)
	}
	out := make([]Mount, 0, len(infos))
	for _, in := range infos {
		out = append(out, Mount{MountPoint: in.Mountpoint, Shared: isShared(in.Optional)})
	}
	return out, nil
}

// isShared reports whether mountinfo's optional fields ("shared:2 master:1")
// hold a peer group, that is, the mount propagates.
func isShared(optional string) bool {
	for _, f := range strings.Fields(optional) {
		if strings.HasPrefix(f, "shared:") {
			return true
		}
	}
	return false
}

// MountOf returns the mount that holds path: the one whose mount point is
// the longest prefix of path (the last one listed wins for equal mount
// points, as later mounts cover earlier ones). ok is false when none does.
func MountOf(mounts []Mount, path string) (Mount, bool) {
	path = filepath.Clean(path)
	var best Mount
	found := false
	for _, m := range mounts {
		mp := filepath.Clean(m.MountPoint)
		if path == mp || mp == "/" || strings.HasPrefix(path, mp+"/") {
			if !found || len(mp) >= len(filepath.Clean(best.MountPoint)) {
				best, found = m, true
			}
		}
	}
	return best, found
}

// MountPropagation reports whether the filesystem holding path propagates
// mounts (Longhorn's MountPropagation node condition): symlinks in path are
// resolved, then the holding mount in MountInfoFile must be "shared".
func MountPropagation(path string) (bool, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false, err
	}
	f, err := os.Open(MountInfoFile)
	if err != nil {
		return false, err
	}
	defer f.Close()
	mounts, err := ParseMountInfo(f)
	if err != nil {
		return false, err
	}
	m, ok := MountOf(mounts, real)
	if !ok {
		return false, fmt.Errorf("no mount holds %s", real)
	}
	return m.Shared, nil
}
