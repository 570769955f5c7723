package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/longhorn-go/longhorn/engine/shm"
)

// Options configure a Store. The zero value is Longhorn's default replica:
// revision counter on (the engine passes --disableRevCounter by default),
// snapshot-max-count 250, no size limit, volume.meta SectorSize 512.
type Options struct {
	// DisableRevisionCounter stops maintaining revision.counter (Longhorn
	// --disableRevCounter; the file is then neither read nor written).
	DisableRevisionCounter bool
	// UnmapMarkSnapChainRemoved makes UnmapAt first mark the snapshots
	// between the head and the first branching snapshot as removed
	// (Longhorn --unmap-mark-snap-chain-removed), so their data is punched too.
	UnmapMarkSnapChainRemoved bool
	// SnapshotMaxCount is snapshot-max-count: 0 means DefaultSnapshotMaxCount,
	// otherwise 1..MaxChainLength.
	SnapshotMaxCount int
	// SnapshotMaxSize is snapshot-max-size in bytes; 0 means no limit.
	SnapshotMaxSize int64
	// MetaSectorSize is written to volume.meta SectorSize by Create:
	// 0 means DefaultMetaSectorSize (512); 512 or 4096 otherwise.
	MetaSectorSize int64
	// BackingFile is the path of a raw backing image used as the bottom,
	// read-only layer; it overrides volume.meta BackingFilePath when set.
	BackingFile string
	// VolumeName, when set, is appended to expansion snapshot names as
	// newer Longhorn does: expand-<size>-<volume> instead of expand-<size>.
	VolumeName string
	// Now is the clock for Created stamps; nil means time.Now.
	Now func() time.Time
}

// Validate checks the fields' ranges (ErrInvalidOption naming the field).
func (o Options) Validate() error { return o.validate("options") }

func (o *Options) validate(op string) error {
	if o.SnapshotMaxCount < 0 || o.SnapshotMaxCount > MaxChainLength {
		return errf(op, "SnapshotMaxCount", ErrInvalidOption, "%d, want 0..%d", o.SnapshotMaxCount, MaxChainLength)
	}
	if o.SnapshotMaxSize < 0 {
		return errf(op, "SnapshotMaxSize", ErrInvalidOption, "%d, want >= 0", o.SnapshotMaxSize)
	}
	if o.MetaSectorSize != 0 && o.MetaSectorSize != 512 && o.MetaSectorSize != SectorSize {
		return errf(op, "MetaSectorSize", ErrInvalidOption, "%d, want 512 or 4096", o.MetaSectorSize)
	}
	return nil
}

func (o *Options) maxCount() int {
	if o.SnapshotMaxCount == 0 {
		return DefaultSnapshotMaxCount
	}
	return o.SnapshotMaxCount
}

func (o *Options) now() string {
	clock := o.Now
	if clock == nil {
		clock = time.Now
	}
	return clock().UTC().Format(time.RFC3339)
}

// Store is one replica directory opened for I/O. All methods are safe for
// concurrent use; see the package doc for the locking rules.
type Store struct {
	dir  string
	opts Options

	// mu is held shared by ReadAt/WriteAt/Flush and by the copy phase of a
	// purge, exclusively by anything that changes st's structure; taking it
	// exclusively advances the sequence number of direct readers (view.go).
	mu seqRWMutex
	// seqRegion holds mu's sequence number in shared memory (nil when
	// shared memory is unavailable: then no ReadView).
	seqRegion *shm.Region
	// slots hands out mu's direct write slots (view.go).
	slots slotSet
	// rmw is held shared by aligned writes and exclusively by the
	// read-modify-write of an unaligned one (writeUnaligned).
	rmw sync.RWMutex
	// purgeMu serialises purges with the operations that could delete
	// files a purge is copying: Revert, Reload, RemoveDiffDisk, Close.
	purgeMu sync.Mutex

	st     *state
	rev    *revisionCounter // nil when disabled
	closed bool
	// folding names the two disks of a running coalesce (under mu): UnmapAt
	// must not punch them while their data is being copied.
	folding map[string]bool
}

// Create makes a new replica of size bytes in dir (created 0700 when
// missing): volume-head-000.img, its .meta, volume.meta and, unless
// disabled, revision.counter = 0; then opens it. Errors: ErrInvalidSize when
// size is not a positive multiple of SectorSize or exceeds MaxVolumeSize, ErrExists when dir already
// holds volume.meta or disk metadata, ErrInvalidOption.
func Create(dir string, size int64, opts Options) (*Store, error) {
	if err := opts.validate("create"); err != nil {
		return nil, err
	}
	if err := checkSize("create", size); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if exists, err := hasReplica(dir); err != nil {
		return nil, err
	} else if exists {
		return nil, errf("create", "dir", ErrExists, "%s", dir)
	}
	head := HeadFileName(0)
	f, err := os.OpenFile(filepath.Join(dir, head), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = writeJSONAtomic(dir, MetaFileName(head), &DiskMeta{Name: head, Created: opts.now()})
	}
	sector := opts.MetaSectorSize
	if sector == 0 {
		sector = DefaultMetaSectorSize
	}
	if err == nil {
		err = writeJSONAtomic(dir, VolumeMetaFile, &VolumeMeta{Size: size, Head: head, Dirty: true,
			SectorSize: sector, BackingFilePath: opts.BackingFile})
	}
	if err != nil {
		_ = removeDiskFiles(dir, head)
		return nil, err
	}
	return Open(dir, opts)
}

// hasReplica reports whether dir holds volume.meta or any disk .meta.
func hasReplica(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) == metaSuffix {
			return true, nil
		}
	}
	return false, nil
}

// Open opens an existing replica directory (ours or Longhorn's): it removes
// leftovers of interrupted operations, opens the live chain, rebuilds the
// location index from the files' data extents and writes volume.meta with
// Dirty = true. Errors: ErrNotExist, ErrCorrupt, ErrChainTooLong,
// ErrInvalidOption, or an I/O error.
func Open(dir string, opts Options) (*Store, error) {
	if err := opts.validate("open"); err != nil {
		return nil, err
	}
	st, err := loadState(dir, &opts, true)
	if err != nil {
		return nil, err
	}
	seq, slots, seqRegion := newSeq()
	s := &Store{dir: dir, opts: opts, st: st, mu: seqRWMutex{seq: seq, slots: slots}, seqRegion: seqRegion}
	if !opts.DisableRevisionCounter {
		if s.rev, err = openRevisionCounter(dir); err != nil {
			st.closeFiles()
			return nil, err
		}
	}
	if err := s.writeMeta(func(m *VolumeMeta) { m.Dirty = true }); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

// OpenOrCreate opens dir when it holds a replica and creates one of size
// bytes otherwise (Longhorn's replica.New).
func OpenOrCreate(dir string, size int64, opts Options) (*Store, error) {
	s, err := Open(dir, opts)
	if errors.Is(err, ErrNotExist) {
		return Create(dir, size, opts)
	}
	return s, err
}

// ReadVolumeMeta reads dir/volume.meta without opening the replica (a
// closed replica's state). Errors: ErrNotExist, ErrCorrupt.
func ReadVolumeMeta(dir string) (VolumeMeta, error) {
	var m VolumeMeta
	err := readJSON(filepath.Join(dir, VolumeMetaFile), &m)
	if errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("%w: %s", ErrNotExist, dir)
	}
	if err != nil && !errors.Is(err, ErrCorrupt) {
		err = fmt.Errorf("%w: %s: %v", ErrCorrupt, VolumeMetaFile, err)
	}
	return m, err
}

// Dir returns the replica directory.
func (s *Store) Dir() string { return s.dir }

// writeMeta applies change to a copy of volume.meta, writes it atomically
// and adopts it. Callers hold mu exclusively (or own s exclusively).
func (s *Store) writeMeta(change func(*VolumeMeta)) error {
	m := s.st.meta
	change(&m)
	if err := writeJSONAtomic(s.dir, VolumeMetaFile, &m); err != nil {
		return err
	}
	s.st.meta = m
	return nil
}

func (s *Store) closeFiles() {
	s.st.closeFiles()
	if s.rev != nil {
		s.rev.close()
	}
}

// Close waits for a running purge, writes volume.meta with Dirty = false,
// syncs and closes every file. Later calls return ErrClosed; a second Close
// returns nil.
func (s *Store) Close() error {
	s.purgeMu.Lock()
	defer s.purgeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	err := s.st.head().f.Sync()
	if s.rev != nil {
		err = errors.Join(err, s.rev.sync())
	}
	if werr := s.writeMeta(func(m *VolumeMeta) { m.Dirty = false }); err == nil {
		err = werr
	}
	s.closeFiles()
	s.closed = true
	return err
}

// Delete closes the store and removes every disk file, volume.meta and
// revision.counter (Longhorn's Replica.Delete). The directory stays.
func (s *Store) Delete() error {
	if err := s.Close(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	for name := range s.st.disks {
		err = errors.Join(err, removeDiskFiles(s.dir, name))
	}
	return errors.Join(err, removeFiles(s.dir, VolumeMetaFile, RevisionCounterFile))
}

// Reload re-reads the directory (after a rebuild replaced files under it)
// and swaps in the new chain and index. I/O waits for it; on error the old
// state stays in use.
func (s *Store) Reload() error {
	s.purgeMu.Lock()
	defer s.purgeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errf("reload", "", ErrClosed, "")
	}
	return s.reloadLocked()
}

func (s *Store) reloadLocked() error {
	st, err := loadState(s.dir, &s.opts, true)
	if err != nil {
		return err
	}
	old := s.st
	st.meta.Dirty, st.meta.Rebuilding = true, old.meta.Rebuilding
	if err := writeJSONAtomic(s.dir, VolumeMetaFile, &st.meta); err != nil {
		st.closeFiles()
		return err
	}
	s.st = st
	old.closeFiles()
	return nil
}

// Info is the replica's state: volume.meta plus the revision counter and
// the live chain.
type Info struct {
	VolumeMeta
	RevisionCounter         int64
	RevisionCounterDisabled bool
	// Chain is the live chain, head first (Longhorn's Replica.Chain order).
	Chain []string
	// SnapshotCount counts snapshots not marked removed (Longhorn's count usage).
	SnapshotCount int
	// SnapshotMaxCount and SnapshotMaxSize are the limits in force.
	SnapshotMaxCount          int
	SnapshotMaxSize           int64
	UnmapMarkSnapChainRemoved bool
}

// Info returns the current state. After Close it returns the last state.
func (s *Store) Info() Info {
	s.mu.RLock()
	defer s.mu.RUnlock()
	info := Info{
		VolumeMeta:                s.st.meta,
		RevisionCounterDisabled:   s.rev == nil,
		SnapshotMaxCount:          s.opts.maxCount(),
		SnapshotMaxSize:           s.opts.SnapshotMaxSize,
		UnmapMarkSnapChainRemoved: s.opts.UnmapMarkSnapChainRemoved,
	}
	if s.rev != nil {
		info.RevisionCounter = s.rev.value()
	}
	for i := len(s.st.layers) - 1; i > s.st.backing; i-- {
		info.Chain = append(info.Chain, s.st.layers[i].name)
	}
	info.SnapshotCount = s.countUsageLocked()
	return info
}

// Chain returns the live chain's file names, head first.
func (s *Store) Chain() []string { return s.Info().Chain }

// Size returns the volume size in bytes.
func (s *Store) Size() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.meta.Size
}

func (s *Store) countUsageLocked() int {
	n := 0
	for name, d := range s.st.disks {
		if name != s.st.meta.Head && !d.Removed {
			n++
		}
	}
	return n
}

// DiskInfo is one disk as `snapshot ls/info` shows it (Longhorn's
// replica.DiskInfo and its JSON keys; size is a decimal string in JSON).
type DiskInfo struct {
	Name        string            `json:"name"`
	Parent      string            `json:"parent"`
	Children    map[string]bool   `json:"children"`
	Removed     bool              `json:"removed"`
	UserCreated bool              `json:"usercreated"`
	Created     string            `json:"created"`
	Size        int64             `json:"size,string"` // allocated bytes (st_blocks*512)
	Labels      map[string]string `json:"labels"`
}

// ListDisks returns every disk in the directory (head, snapshots on and off
// the live chain) by file name, as Longhorn's ListDisks.
func (s *Store) ListDisks() map[string]DiskInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]DiskInfo, len(s.st.disks))
	for name, d := range s.st.disks {
		di := DiskInfo{Name: name, Parent: d.Parent, Removed: d.Removed, UserCreated: d.UserCreated,
			Created: d.Created, Labels: map[string]string{}, Children: map[string]bool{}}
		for k, v := range d.Labels {
			di.Labels[k] = v
		}
		for c := range s.st.children[name] {
			di.Children[c] = true
		}
		di.Size = allocated(filepath.Join(s.dir, name))
		out[name] = di
	}
	return out
}

// SnapshotUsage returns the number of snapshots not marked removed and
// their allocated bytes, the inputs of Longhorn's canDoSnapshot.
func (s *Store) SnapshotUsage() (count int, size int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.countUsageLocked(), s.sizeUsageLocked()
}

func (s *Store) sizeUsageLocked() int64 {
	var n int64
	for name, d := range s.st.disks {
		if name != s.st.meta.Head && !d.Removed {
			n += allocated(filepath.Join(s.dir, name))
		}
	}
	return n
}

// HeadStat describes the head file for the engine's salvage choice.
type HeadStat struct {
	ModTime   time.Time // last data modification of the head file
	Size      int64     // apparent size
	Allocated int64     // allocated bytes
}

// HeadStat stats the head file.
func (s *Store) HeadStat() (HeadStat, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	fi, err := s.st.head().f.Stat()
	if err != nil {
		return HeadStat{}, err
	}
	return HeadStat{ModTime: fi.ModTime(), Size: fi.Size(), Allocated: allocated(filepath.Join(s.dir, s.st.meta.Head))}, nil
}

// SetRebuilding writes volume.meta Rebuilding.
func (s *Store) SetRebuilding(rebuilding bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errf("set-rebuilding", "", ErrClosed, "")
	}
	return s.writeMeta(func(m *VolumeMeta) { m.Rebuilding = rebuilding })
}

// RevisionCounter returns the counter (0 when disabled).
func (s *Store) RevisionCounter() int64 {
	if s.rev == nil {
		return 0
	}
	return s.rev.value()
}

// SetRevisionCounter stores counter in revision.counter; call it with no
// I/O in flight. A no-op when the counter is disabled.
func (s *Store) SetRevisionCounter(counter int64) error {
	if counter < 0 {
		return errf("set-revision-counter", "counter", ErrInvalidOption, "%d, want >= 0", counter)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errf("set-revision-counter", "", ErrClosed, "")
	}
	if s.rev == nil {
		return nil
	}
	return s.rev.set(counter)
}

// SetUnmapMarkSnapChainRemoved changes the option at run time.
func (s *Store) SetUnmapMarkSnapChainRemoved(enabled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.UnmapMarkSnapChainRemoved = enabled
}

// SetSnapshotMaxCount changes snapshot-max-count (0 = default, 1..250).
func (s *Store) SetSnapshotMaxCount(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.opts
	o.SnapshotMaxCount = n
	if err := o.validate("set-snapshot-max-count"); err != nil {
		return err
	}
	s.opts = o
	return nil
}

// SetSnapshotMaxSize changes snapshot-max-size (bytes, 0 = no limit).
func (s *Store) SetSnapshotMaxSize(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.opts
	o.SnapshotMaxSize = n
	if err := o.validate("set-snapshot-max-size"); err != nil {
		return err
	}
	s.opts = o
	return nil
}

// RebuildFile is one file pair a rebuild copies from a healthy replica.
type RebuildFile struct {
	Name      string // volume-snap-NAME.img
	MetaName  string // volume-snap-NAME.img.meta
	Allocated int64  // allocated bytes of Name
}

// RebuildFiles lists every disk except the head (Longhorn's
// PrepareRebuildReplica source list): the live chain oldest first, then the
// disks off the live chain sorted by name.
func (s *Store) RebuildFiles() []RebuildFile {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[string]bool{}
	var names []string
	for i := s.st.backing + 1; i < len(s.st.layers)-1; i++ {
		names = append(names, s.st.layers[i].name)
		seen[s.st.layers[i].name] = true
	}
	var rest []string
	for name := range s.st.disks {
		if !seen[name] && name != s.st.meta.Head {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	out := make([]RebuildFile, 0, len(names)+len(rest))
	for _, n := range append(names, rest...) {
		out = append(out, RebuildFile{Name: n, MetaName: MetaFileName(n), Allocated: allocated(filepath.Join(s.dir, n))})
	}
	return out
}

// FilePath returns the path of a layout file in the replica directory for a
// rebuild receiver to write (see ValidateFileName); ErrInvalidName otherwise.
func (s *Store) FilePath(name string) (string, error) {
	if err := ValidateFileName(name); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, name), nil
}
