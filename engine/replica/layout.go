package replica

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// On-disk layout constants (Longhorn: longhorn-engine pkg/util/disk
// constant.go, pkg/replica/replica.go and revision_counter.go).
const (
	// SectorSize is the volume sector (Longhorn VolumeSectorSize): the unit
	// of the location index, of alignment and of volume sizes.
	SectorSize = 4096
	// DefaultMetaSectorSize is what Longhorn's replica writes as
	// volume.meta SectorSize (ReplicaSectorSize) when it has no backing file.
	DefaultMetaSectorSize = 512
	// MaxChainLength is Longhorn's MaximumTotalSnapshotCount: the most disks
	// (snapshots, removed or not, plus the head) a live chain may hold, so a
	// layer index fits one byte.
	MaxChainLength = 250
	// DefaultSnapshotMaxCount is the default of snapshot-max-count.
	DefaultSnapshotMaxCount = 250
	// MaxVolumeSize is the largest volume size in bytes (64 TiB). The
	// location index takes one byte of address space per sector (256 MiB
	// per TiB, 16 GiB at this size); a larger index could not be allocated
	// and the process would die instead of answering.
	MaxVolumeSize = 64 << 40

	// VolumeMetaFile is the replica's metadata file.
	VolumeMetaFile = "volume.meta"
	// RevisionCounterFile holds the revision counter: a 4096-byte block,
	// ASCII decimal, NUL padded.
	RevisionCounterFile = "revision.counter"
	// ExpansionLabel is the label Expand puts on its snapshot, value = new size.
	ExpansionLabel = "replica-expansion"

	headPrefix     = "volume-head-"
	snapPrefix     = "volume-snap-"
	imgSuffix      = ".img"
	metaSuffix     = ".meta"
	checksumSuffix = ".checksum"
	tmpSuffix      = ".tmp"
	maxNameLength  = 200
	revisionBlock  = 4096
)

// VolumeMeta is volume.meta, field for field as Longhorn's replica Info
// (no JSON tags: capitalised keys, this order). Written atomically.
type VolumeMeta struct {
	Size            int64  // volume size in bytes
	Head            string // file name of the head, volume-head-NNN.img
	Dirty           bool   // true while open; false after a clean Close
	Rebuilding      bool   // true while being rebuilt from another replica
	Error           string // last error recorded
	Parent          string // file name of the head's parent ("" without snapshots)
	SectorSize      int64  // Longhorn writes 512 (ReplicaSectorSize)
	BackingFilePath string // absolute path of a backing image file, or ""
	Encrypted       bool
}

// DiskMeta is a `<file>.meta` (Longhorn's disk struct, capitalised keys).
// Name is informative only: Longhorn writes the former head's file name into
// a snapshot's meta, and readers take the name from the meta file's name.
// Parent is the parent's file name, "" for the oldest disk. Created is
// RFC 3339 (UTC, seconds). Labels is null when there are none.
type DiskMeta struct {
	Name        string
	Parent      string
	Removed     bool
	UserCreated bool
	Created     string
	Labels      map[string]string
}

// HeadFileName returns volume-head-NNN.img (%03d) for n.
func HeadFileName(n int) string { return fmt.Sprintf("%s%03d%s", headPrefix, n, imgSuffix) }

// SnapshotFileName returns volume-snap-NAME.img.
func SnapshotFileName(name string) string { return snapPrefix + name + imgSuffix }

// MetaFileName returns the meta file of a disk file: NAME.meta.
func MetaFileName(disk string) string { return disk + metaSuffix }

// SnapshotName returns NAME for volume-snap-NAME.img.
func SnapshotName(file string) (string, bool) {
	if !strings.HasPrefix(file, snapPrefix) || !strings.HasSuffix(file, imgSuffix) {
		return "", false
	}
	name := strings.TrimSuffix(strings.TrimPrefix(file, snapPrefix), imgSuffix)
	return name, name != ""
}

// headNumber returns NNN for volume-head-NNN.img.
func headNumber(file string) (int, bool) {
	if !strings.HasPrefix(file, headPrefix) || !strings.HasSuffix(file, imgSuffix) {
		return 0, false
	}
	digits := strings.TrimSuffix(strings.TrimPrefix(file, headPrefix), imgSuffix)
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// IsHeadFileName reports whether file is a volume-head-NNN.img name.
func IsHeadFileName(file string) bool { _, ok := headNumber(file); return ok }

// checkSize accepts a volume size: a positive multiple of SectorSize up to
// MaxVolumeSize. Errors wrap ErrInvalidSize.
func checkSize(op string, size int64) error {
	if size <= 0 || size%SectorSize != 0 || size > MaxVolumeSize {
		return errf(op, "size", ErrInvalidSize, "%d, want a positive multiple of %d up to %d", size, SectorSize, int64(MaxVolumeSize))
	}
	return nil
}

// ValidateSnapshotName checks a snapshot name: 1..200 characters from
// [A-Za-z0-9_.-], starting with a letter or digit (UUIDs, Kubernetes names
// and expand-<size> all qualify). Errors wrap ErrInvalidName.
func ValidateSnapshotName(name string) error {
	if name == "" || len(name) > maxNameLength {
		return errf("snapshot", "name", ErrInvalidName, "length %d, want 1..%d", len(name), maxNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '-' && c != '_' && c != '.') {
			return errf("snapshot", "name", ErrInvalidName, "%q: character %d must be [A-Za-z0-9_.-] and start alphanumeric", name, i)
		}
	}
	return nil
}

// headDisplayName is how Longhorn lists the head among snapshots.
const headDisplayName = "volume-head"

// validateNewSnapshotName is ValidateSnapshotName for a snapshot about to be
// taken, which must also not read as the head ("volume-head") or as a disk
// file name (volume-head-NNN.img, volume-snap-X.img): the APIs take both
// snapshot and file names, so such a snapshot could be mistaken for the head
// or another snapshot. Errors wrap ErrInvalidName.
func validateNewSnapshotName(name string) error {
	if err := ValidateSnapshotName(name); err != nil {
		return err
	}
	base := strings.TrimSuffix(strings.TrimSuffix(name, metaSuffix), checksumSuffix)
	if _, isSnap := SnapshotName(base); name == headDisplayName || IsHeadFileName(base) || isSnap {
		return errf("snapshot", "name", ErrInvalidName, "%q is reserved: it reads as the head or a disk file name", name)
	}
	return nil
}

// ValidateFileName accepts exactly the file names of the layout that a
// rebuild may transfer: volume-head-NNN.img, volume-snap-NAME.img, and those
// with .meta or .checksum appended. Errors wrap ErrInvalidName.
func ValidateFileName(name string) error {
	base := strings.TrimSuffix(strings.TrimSuffix(name, metaSuffix), checksumSuffix)
	if IsHeadFileName(base) && !strings.HasSuffix(name, checksumSuffix) {
		return nil
	}
	if snap, ok := SnapshotName(base); ok && ValidateSnapshotName(snap) == nil {
		return nil
	}
	return errf("file", "name", ErrInvalidName, "%q is not a replica layout file name", name)
}

// encodeJSON encodes v the way Longhorn's encodeToFile does
// (json.Encoder.Encode: compact, HTML-escaped, trailing newline).
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// testHook, when set by a test, is called at named points of multi-step
// operations; a non-nil return simulates a failure there.
var testHook func(point string) error

func hook(point string) error {
	if testHook == nil {
		return nil
	}
	return testHook(point)
}

// writeFileAtomic replaces dir/name with data: write name.tmp, fsync it,
// rename over name, fsync dir. A crash at any point leaves either the old or
// the new complete file (plus perhaps a stale .tmp, removed on open).
func writeFileAtomic(dir, name string, data []byte) (err error) {
	tmp := filepath.Join(dir, name+tmpSuffix)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = hook("atomic-rename:" + name); err != nil {
		return err
	}
	if err = os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}

func writeJSONAtomic(dir, name string, v any) error {
	data, err := encodeJSON(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, name, data)
}

// readJSON decodes the first JSON value of path into v (Longhorn uses a
// json.Decoder, so trailing data is ignored). An empty file gives io.EOF.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, filepath.Base(path), err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return nil
}

// removeFiles removes the given names from dir, ignoring missing ones.
func removeFiles(dir string, names ...string) error {
	var first error
	for _, n := range names {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = err
		}
	}
	return first
}

// removeDiskFiles removes a disk's data, meta and checksum files.
func removeDiskFiles(dir, disk string) error {
	return removeFiles(dir, disk, MetaFileName(disk), disk+checksumSuffix)
}
