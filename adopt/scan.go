// Package adopt turns replica directories found on a node's disk (those a
// Longhorn installation, or this one, left in <disk>/replicas/) back into
// Volume and Replica objects, so their data is served again without a copy:
// the migration path for a Longhorn user whose Volume objects are gone
// (a new cluster on the old disks, Longhorn uninstalled with its data kept).
// The on-disk layout is Longhorn's (engine/replica), so the directories are
// used as they are. `longhorn adopt` (app/adopt.go) runs it.
//
// Scan reads the disk, MakePlan decides what to create (pure, table
// tested), Apply creates it.
package adopt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/longhorn-go/longhorn/engine/replica"
)

// ReplicasDir is the directory of a disk holding replica directories.
const ReplicasDir = "replicas"

// Found is one replica directory of a disk.
type Found struct {
	Dir    string // directory name under <disk>/replicas, <volume>-<8 hex>
	Volume string
	Size   int64  // bytes, from volume.meta
	Head   string // head file name
	// Snapshots are the snapshot files present (marked removed or not).
	Snapshots []string
	Dirty     bool
	// Problem says why the directory cannot be adopted; "" when it can.
	Problem string
}

// dirName is Longhorn's replica directory name: the volume name, a dash,
// 8 lower-case hex digits (types.ReplicaDataDirectoryName).
var dirName = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*)-([0-9a-f]{8})$`)

// VolumeNameOf returns the volume of a replica directory name and its
// 8-hex suffix.
func VolumeNameOf(dir string) (volume, id string, ok bool) {
	m := dirName.FindStringSubmatch(dir)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Scan lists the replica directories of the disk mounted at root (the
// directory holding longhorn-disk.cfg and replicas/), sorted by name. A
// directory that is not a replica is reported with its Problem, not
// skipped silently. A disk without replicas/ has none.
func Scan(root string) ([]Found, error) {
	entries, err := os.ReadDir(filepath.Join(root, ReplicasDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Found
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		out = append(out, inspect(filepath.Join(root, ReplicasDir, e.Name())))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// inspect reads one directory without opening it (which would change
// volume.meta).
func inspect(path string) Found {
	f := Found{Dir: filepath.Base(path)}
	vol, _, ok := VolumeNameOf(f.Dir)
	if !ok {
		f.Problem = fmt.Sprintf("directory name %q is not <volume>-<8 hex digits>", f.Dir)
		return f
	}
	f.Volume = vol
	m, err := replica.ReadVolumeMeta(path)
	if err != nil {
		f.Problem = fmt.Sprintf("volume.meta: %v", err)
		return f
	}
	f.Size, f.Head, f.Dirty = m.Size, m.Head, m.Dirty
	if _, err := os.Stat(filepath.Join(path, m.Head)); err != nil {
		f.Problem = fmt.Sprintf("head %s: %v", m.Head, err)
		return f
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		f.Problem = err.Error()
		return f
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "volume-snap-") && strings.HasSuffix(n, ".img") {
			f.Snapshots = append(f.Snapshots, n)
		}
	}
	if f.Size <= 0 || f.Size%4096 != 0 {
		f.Problem = fmt.Sprintf("volume.meta size %d is not a positive multiple of 4096", f.Size)
	}
	return f
}
