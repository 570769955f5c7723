package replica

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

// layer is one open file of the live chain.
type layer struct {
	name string // file name in the directory, or the backing file's path
	f    *os.File
}

// state is everything Open derives from the directory: swapped as a whole by
// Reload, changed in place (under the exclusive lock) by the other
// structural operations.
type state struct {
	meta     VolumeMeta
	disks    map[string]*DiskMeta       // every disk in the directory, by file name
	children map[string]map[string]bool // parent file name -> child file names
	layers   []*layer                   // [0] nil; [1..] oldest..head
	backing  int                        // 1 when layers[1] is the backing file
	loc      *locIndex
}

func (st *state) head() *layer { return st.layers[len(st.layers)-1] }

func (st *state) closeFiles() {
	for _, l := range st.layers {
		if l != nil {
			l.f.Close()
		}
	}
}

// layerIndex returns the index of disk in the live chain, or 0.
func (st *state) layerIndex(disk string) int {
	for i := len(st.layers) - 1; i > st.backing; i-- {
		if st.layers[i].name == disk {
			return i
		}
	}
	return 0
}

// resolve maps a snapshot name or disk file name to a disk file name.
func (st *state) resolve(name string) (string, bool) {
	if _, ok := st.disks[name]; ok {
		return name, true
	}
	if f := SnapshotFileName(name); st.disks[f] != nil {
		return f, true
	}
	return "", false
}

func (st *state) rebuildChildren() {
	st.children = map[string]map[string]bool{}
	for name, d := range st.disks {
		if d.Parent != "" {
			if st.children[d.Parent] == nil {
				st.children[d.Parent] = map[string]bool{}
			}
			st.children[d.Parent][name] = true
		}
	}
}

// chain returns the live chain, head first, following Parent from the head.
func (st *state) chain() ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for cur := st.meta.Head; cur != ""; cur = st.disks[cur].Parent {
		if st.disks[cur] == nil {
			return nil, fmt.Errorf("%w: chain refers to %s, which has no .meta", ErrCorrupt, cur)
		}
		if seen[cur] {
			return nil, fmt.Errorf("%w: loop in chain at %s", ErrCorrupt, cur)
		}
		seen[cur] = true
		out = append(out, cur)
	}
	if len(out) > MaxChainLength {
		return nil, fmt.Errorf("%w: live chain has %d disks, limit %d", ErrChainTooLong, len(out), MaxChainLength)
	}
	return out, nil
}

// loadState reads a replica directory: volume.meta, every disk .meta,
// repairs what an interrupted operation of ours can leave behind (when
// repair is set), opens the live chain and builds the location index from
// the files' data extents.
func loadState(dir string, opts *Options, repair bool) (*state, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotExist, dir)
	}
	if repair {
		if err := sweepTmp(dir); err != nil {
			return nil, err
		}
	}
	st := &state{disks: map[string]*DiskMeta{}}
	if err := st.readDisks(dir); err != nil {
		return nil, err
	}
	if err := st.readVolumeMeta(dir, repair); err != nil {
		return nil, err
	}
	if repair {
		if err := st.repair(dir); err != nil {
			return nil, err
		}
	}
	st.rebuildChildren()
	if h := st.disks[st.meta.Head]; h == nil {
		return nil, fmt.Errorf("%w: head %q has no .meta", ErrCorrupt, st.meta.Head)
	} else {
		st.meta.Parent = h.Parent
	}
	if opts.BackingFile != "" {
		st.meta.BackingFilePath = opts.BackingFile
	}
	if err := st.openChain(dir); err != nil {
		st.closeFiles()
		return nil, err
	}
	if err := st.checkHeadSize(); err != nil {
		st.closeFiles()
		return nil, err
	}
	if err := st.checkLayerSizes(); err != nil {
		st.closeFiles()
		return nil, err
	}
	if err := st.buildIndex(); err != nil {
		st.closeFiles()
		return nil, err
	}
	return st, nil
}

func sweepTmp(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), tmpSuffix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

func (st *state) readDisks(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotExist, dir)
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || n == VolumeMetaFile || !strings.HasSuffix(n, metaSuffix) {
			continue
		}
		var d DiskMeta
		if err := readJSON(filepath.Join(dir, n), &d); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: %s is empty", ErrCorrupt, n)
			}
			return err
		}
		d.Name = strings.TrimSuffix(n, metaSuffix) // as Longhorn: the file name wins
		st.disks[d.Name] = &d
	}
	return nil
}

// readVolumeMeta reads volume.meta. When it is missing or empty and exactly
// one head exists, it is rebuilt from the head as Longhorn's
// tryRecoverVolumeMetaFile does (size = the head's apparent size).
func (st *state) readVolumeMeta(dir string, repair bool) error {
	err := readJSON(filepath.Join(dir, VolumeMetaFile), &st.meta)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, io.EOF) {
		return err
	}
	var heads []string
	for name := range st.disks {
		if IsHeadFileName(name) {
			heads = append(heads, name)
		}
	}
	if len(heads) == 0 || !repair {
		return fmt.Errorf("%w: no %s in %s", ErrNotExist, VolumeMetaFile, dir)
	}
	if len(heads) > 1 {
		return fmt.Errorf("%w: %s missing and %d heads present", ErrCorrupt, VolumeMetaFile, len(heads))
	}
	fi, err := os.Stat(filepath.Join(dir, heads[0]))
	if err != nil {
		return fmt.Errorf("%w: %s missing and head unreadable: %v", ErrCorrupt, VolumeMetaFile, err)
	}
	st.meta = VolumeMeta{Size: fi.Size(), Head: heads[0], Dirty: true, SectorSize: DefaultMetaSectorSize}
	return writeJSONAtomic(dir, VolumeMetaFile, &st.meta)
}

// repair undoes what a crash in the middle of one of our multi-step
// operations leaves (see the package doc, "Crash safety").
func (st *state) repair(dir string) error {
	headStat, err := os.Stat(filepath.Join(dir, st.meta.Head))
	if err != nil {
		return fmt.Errorf("%w: head %s: %v", ErrCorrupt, st.meta.Head, err)
	}
	// Heads other than the current one: a snapshot/revert/expand that did
	// not reach, or did not finish after, its volume.meta commit.
	for name := range st.disks {
		if IsHeadFileName(name) && name != st.meta.Head {
			if err := removeDiskFiles(dir, name); err != nil {
				return err
			}
			delete(st.disks, name)
		}
	}
	if err := removeStaleHeadData(dir, st.meta.Head); err != nil {
		return err
	}
	if err := st.removeHeadLinks(dir, headStat); err != nil {
		return err
	}
	return st.repairMissingData(dir)
}

// removeStaleHeadData removes volume-head-*.img files other than head (a
// new head created just before a crash, before its .meta was written).
func removeStaleHeadData(dir, head string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if IsHeadFileName(e.Name()) && e.Name() != head {
			if err := removeDiskFiles(dir, e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeHeadLinks removes volume-snap-*.img files that are hard links of the
// head: a snapshot interrupted before its volume.meta commit.
func (st *state) removeHeadLinks(dir string, head fs.FileInfo) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, ok := SnapshotName(e.Name()); !ok {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil || !os.SameFile(fi, head) {
			continue
		}
		if err := removeDiskFiles(dir, e.Name()); err != nil {
			return err
		}
		delete(st.disks, e.Name())
	}
	return nil
}

// repairMissingData handles a .meta whose data file is gone. For a removed
// disk that is what a purge leaves when it stops between renaming the
// coalesced file over its child (or deleting a leaf) and rewriting the
// metadata: finish the purge. Anything else is corruption.
func (st *state) repairMissingData(dir string) error {
	names := make([]string, 0, len(st.disks))
	for name := range st.disks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		d := st.disks[name]
		if !d.Removed {
			return fmt.Errorf("%w: %s has a .meta but no data file", ErrCorrupt, name)
		}
		var kids []string
		for c, cd := range st.disks {
			if cd.Parent == name {
				kids = append(kids, c)
			}
		}
		if len(kids) > 1 {
			return fmt.Errorf("%w: removed %s has no data file and %d children", ErrCorrupt, name, len(kids))
		}
		if len(kids) == 1 {
			child := *st.disks[kids[0]]
			child.Parent = d.Parent
			if err := writeJSONAtomic(dir, MetaFileName(kids[0]), &child); err != nil {
				return err
			}
			st.disks[kids[0]] = &child
		}
		if err := removeDiskFiles(dir, name); err != nil {
			return err
		}
		delete(st.disks, name)
	}
	return nil
}

func (st *state) openChain(dir string) error {
	chain, err := st.chain()
	if err != nil {
		return err
	}
	st.layers = []*layer{nil}
	if p := st.meta.BackingFilePath; p != "" {
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("replica: open backing file: %w", err)
		}
		st.layers = append(st.layers, &layer{name: p, f: f})
		st.backing = 1
	}
	if len(chain)+st.backing > 255 {
		return fmt.Errorf("%w: %d layers", ErrChainTooLong, len(chain)+st.backing)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		f, err := os.OpenFile(filepath.Join(dir, chain[i]), os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("%w: open %s: %v", ErrCorrupt, chain[i], err)
		}
		st.layers = append(st.layers, &layer{name: chain[i], f: f})
	}
	return nil
}

// checkHeadSize requires the head's apparent size to equal volume.meta Size
// (the head is always created at the volume size), so a bad Size cannot make
// Open allocate an index for a volume that does not exist.
func (st *state) checkHeadSize() error {
	size := st.meta.Size
	if checkSize("open", size) != nil {
		return fmt.Errorf("%w: %s Size %d is not a positive multiple of %d up to %d", ErrCorrupt, VolumeMetaFile,
			size, SectorSize, int64(MaxVolumeSize))
	}
	fi, err := st.head().f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != size {
		return fmt.Errorf("%w: %s Size %d but head %s is %d bytes", ErrCorrupt, VolumeMetaFile, size, st.meta.Head, fi.Size())
	}
	return nil
}

// checkLayerSizes requires every snapshot file of the chain to have a
// sector-aligned, positive apparent size no larger than its child's: every
// layer is created at the volume size of its time and volumes only grow
// (Expand and a revert after it start a larger head over smaller
// snapshots). A layer that is larger than its child, unaligned or empty
// (truncated under the replica) would make this replica's data silently
// differ from the others', so it is ErrCorrupt and the replica is rebuilt.
func (st *state) checkLayerSizes() error {
	childSize := st.meta.Size
	for i := len(st.layers) - 2; i > st.backing; i-- {
		l := st.layers[i]
		fi, err := l.f.Stat()
		if err != nil {
			return fmt.Errorf("replica: stat %s: %w", l.name, err)
		}
		size := fi.Size()
		if size <= 0 || size%SectorSize != 0 || size > childSize {
			return fmt.Errorf("%w: layer %s is %d bytes; a snapshot is a positive multiple of %d bytes no larger than its child (%d)",
				ErrCorrupt, l.name, size, SectorSize, childSize)
		}
		childSize = size
	}
	return nil
}

// buildIndex fills the location index from the data extents of each layer,
// oldest first, so newer layers win. A sector partly covered by an extent
// counts as held by that layer (extents are rounded outward to sectors).
// The extents come from FIEMAP where the filesystem has it
// (sparse.WalkDataMapped: the same extents as the SEEK_DATA scan, about 20x
// faster on a file of many small extents), else from the scan.
func (st *state) buildIndex() error { return st.buildIndexWith(sparse.WalkDataMapped) }

// buildIndexWith is buildIndex with the extent walk given (tests compare
// the FIEMAP walk with sparse.WalkData).
func (st *state) buildIndexWith(walk func(*os.File, int64, int64, func(sparse.Extent) error) error) error {
	size := st.meta.Size
	st.loc = newLocIndex(size / SectorSize)
	for i := 1; i < len(st.layers); i++ {
		v := uint8(i)
		err := walk(st.layers[i].f, 0, size, func(e sparse.Extent) error {
			first := e.Offset / SectorSize
			last := (e.End() + SectorSize - 1) / SectorSize
			st.loc.set(first, last-first, v)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// fileIdentity is used by tests to tell hard links apart.
func fileIdentity(path string) (uint64, error) {
	var s unix.Stat_t
	if err := unix.Stat(path, &s); err != nil {
		return 0, err
	}
	return s.Ino, nil
}
