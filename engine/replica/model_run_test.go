package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// modelRun drives a Store and the model with the same random operations and
// compares every read, every error and, periodically, the whole volume, the
// disk tree and every snapshot's view (read from the files).
type modelRun struct {
	t     testing.TB
	r     *rand.Rand
	s     *Store
	m     *model
	dir   string
	opts  Options
	op    int
	log   []string
	names int
	stats map[string]int
	spent map[string]time.Duration
}

// TestRandomizedModel is the randomized test: thousands of writes,
// unmaps, snapshots, reverts, marks + purges and expansions against the
// in-memory model, reproducible from the seed printed on failure
// (-replica.seed=N, -replica.ops=N, -replica.seeds=N for longer runs).
func TestRandomizedModel(t *testing.T) {
	ops, seeds := 1200, 2
	if testing.Short() {
		ops, seeds = 300, 1
	}
	if *flagModelOps > 0 {
		ops = *flagModelOps
	}
	if *flagModelSeeds > 0 {
		seeds = *flagModelSeeds
	}
	for i := 0; i < seeds; i++ {
		seed := uint64(i + 1)
		if *flagModelSeed != 0 {
			seed = *flagModelSeed
		}
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			if err := runModel(t, seed, ops); err != nil {
				t.Fatal(err)
			}
		})
		if *flagModelSeed != 0 {
			break
		}
	}
}

// FuzzRandomizedModel runs short model sequences from fuzzed seeds.
func FuzzRandomizedModel(f *testing.F) {
	f.Add(uint64(1), uint16(50))
	f.Add(uint64(42), uint16(120))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16) {
		if err := runModel(t, seed, int(n%200)); err != nil {
			t.Fatal(err)
		}
	})
}

func runModel(t testing.TB, seed uint64, ops int) error {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	sectors := int64(16 + r.IntN(48))
	opts := Options{SnapshotMaxCount: 12 + r.IntN(20), UnmapMarkSnapChainRemoved: r.IntN(4) == 0,
		DisableRevisionCounter: r.IntN(2) == 0, Now: fixedClock}
	dir := filepath.Join(t.TempDir(), "r")
	s, err := Create(dir, sectors*ss, opts)
	if err != nil {
		return err
	}
	mr := &modelRun{t: t, r: r, s: s, m: newModel(sectors, opts.SnapshotMaxCount, opts.UnmapMarkSnapChainRemoved), dir: dir, opts: opts,
		stats: map[string]int{}, spent: map[string]time.Duration{}}
	defer func() { mr.s.Close() }()
	for mr.op = 0; mr.op < ops; mr.op++ {
		if err := mr.step(); err != nil {
			return fmt.Errorf("seed %d op %d: %w\nlast ops:\n%s", seed, mr.op, err, strings.Join(mr.log, "\n"))
		}
	}
	if err := mr.checkAll(); err != nil {
		return fmt.Errorf("seed %d final check: %w", seed, err)
	}
	t.Logf("seed %d: %v; time %v", seed, mr.stats, mr.spent)
	return nil
}

func (mr *modelRun) logf(format string, args ...any) {
	mr.stats[strings.Fields(format)[0]]++
	mr.log = append(mr.log, fmt.Sprintf("%d: ", mr.op)+fmt.Sprintf(format, args...))
	if len(mr.log) > 30 {
		mr.log = mr.log[1:]
	}
}

func (mr *modelRun) step() error {
	p := mr.r.IntN(100)
	start := time.Now()
	defer func() { mr.spent[strconv.Itoa(p/5*5)] += time.Since(start) }()
	switch {
	case p < 35:
		return mr.write()
	case p < 55:
		return mr.read()
	case p < 63:
		return mr.unmap()
	case p < 71:
		return mr.snapshot()
	case p < 75:
		return mr.revert()
	case p < 81:
		return mr.mark()
	case p < 86:
		return mr.purgeOne()
	case p < 88:
		mr.logf("purge all")
		mr.m.purgeAll()
		return mr.s.Purge(context.Background(), nil)
	case p < 91:
		return mr.expand()
	case p < 93:
		mr.logf("reopen")
		if err := mr.s.Close(); err != nil {
			return err
		}
		s, err := Open(mr.dir, mr.opts)
		mr.s = s
		return err
	case p < 95:
		return mr.s.Flush()
	default:
		return mr.checkAll()
	}
}

func (mr *modelRun) span() (int64, int64) {
	first := mr.r.Int64N(mr.m.sectors)
	return first, 1 + mr.r.Int64N(min(8, mr.m.sectors-first))
}

func tokenBytes(tok uint64) []byte {
	if tok == 0 {
		return make([]byte, ss)
	}
	return pattern(tok, 0, ss)
}

func (mr *modelRun) write() error {
	first, n := mr.span()
	buf := make([]byte, 0, n*ss)
	for i := int64(0); i < n; i++ {
		tok := uint64(mr.op)<<16 | uint64(i+1)
		mr.m.disks[mr.m.head].data[first+i] = tok
		buf = append(buf, tokenBytes(tok)...)
	}
	mr.logf("write %d+%d", first, n)
	_, err := mr.s.WriteAt(buf, first*ss)
	return err
}

func (mr *modelRun) read() error {
	first, n := mr.span()
	mr.logf("read %d+%d", first, n)
	return mr.compare(first, n)
}

func (mr *modelRun) compare(first, n int64) error {
	got := make([]byte, n*ss)
	if _, err := mr.s.ReadAt(got, first*ss); err != nil {
		return err
	}
	for i := int64(0); i < n; i++ {
		tok := mr.m.view(mr.m.head, first+i)
		if !bytes.Equal(got[i*ss:(i+1)*ss], tokenBytes(tok)) {
			return mismatch("sector %d: want token %x", first+i, tok)
		}
	}
	return nil
}

func (mr *modelRun) unmap() error {
	first, n := mr.span()
	mr.logf("unmap %d+%d", first, n)
	want := mr.m.unmap(first, n)
	got, err := mr.s.UnmapAt(uint32(n*ss), first*ss)
	if err != nil {
		return err
	}
	if int64(got) != want*ss {
		return mismatch("unmap %d+%d punched %d bytes, model %d sectors", first, n, got, want)
	}
	if want > 0 && want < n {
		mr.stats["unmap:partial"]++
	}
	return mr.compare(first, n)
}

func (mr *modelRun) snapshot() error {
	mr.names++
	name := "s" + itoa64(int64(mr.names))
	if mr.r.IntN(20) == 0 {
		if existing := pickDisk(mr.r, mr.m, func(n string, _ *mDisk) bool { return true }); existing != "" {
			name = snapName(existing)
		}
	}
	want := mr.m.snapshotErr(name)
	mr.logf("snapshot %s (want %v)", name, want)
	err := mr.s.Snapshot(name, true, "", nil)
	if !errors.Is(err, want) || (want == nil) != (err == nil) {
		return mismatch("snapshot %s: got %v want %v", name, err, want)
	}
	if err == nil {
		mr.m.snapshot(name)
	}
	return nil
}

func (mr *modelRun) revert() error {
	target := pickDisk(mr.r, mr.m, func(string, *mDisk) bool { return true })
	if target == "" {
		return nil
	}
	mr.logf("revert %s (removed %v)", target, mr.m.disks[target].removed)
	err := mr.s.Revert(target, "")
	if mr.m.disks[target].removed {
		if !errors.Is(err, ErrRemoved) {
			return mismatch("revert to removed %s: %v", target, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	mr.m.revert(target)
	return nil
}

func (mr *modelRun) mark() error {
	target := pickDisk(mr.r, mr.m, func(_ string, d *mDisk) bool { return !d.removed })
	if target == "" {
		return nil
	}
	mr.logf("mark %s", target)
	mr.m.disks[target].removed = true
	return mr.s.MarkDiskAsRemoved(snapName(target))
}

func (mr *modelRun) purgeOne() error {
	target := pickDisk(mr.r, mr.m, func(_ string, d *mDisk) bool { return d.removed })
	if target == "" {
		return nil
	}
	want := mr.m.purgeOne(target)
	mr.logf("purge %s (want %q)", target, want)
	got, err := mr.s.PurgeSnapshot(context.Background(), target, nil)
	if err != nil {
		return err
	}
	if got != want {
		return mismatch("purge %s: action %q, model %q", target, got, want)
	}
	mr.stats["purge:"+want]++
	return nil
}

func (mr *modelRun) expand() error {
	add := 1 + mr.r.Int64N(16)
	size := (mr.m.sectors + add) * ss
	name := "expand-" + itoa64(size)
	want := mr.m.snapshotErr(name)
	mr.logf("expand +%d (want %v)", add, want)
	err := mr.s.Expand(size)
	if !errors.Is(err, want) || (want == nil) != (err == nil) {
		return mismatch("expand to %d: got %v want %v", size, err, want)
	}
	if err == nil {
		mr.m.snapshot(name)
		mr.m.sectors += add
	}
	return nil
}

// checkAll compares the whole volume, the disk tree and the view of every
// disk not marked removed (computed from the files, not the store's index).
func (mr *modelRun) checkAll() error {
	if err := mr.compare(0, mr.m.sectors); err != nil {
		return err
	}
	disks := mr.s.ListDisks()
	if len(disks) != len(mr.m.disks) {
		return mismatch("%d disks, model %d", len(disks), len(mr.m.disks))
	}
	own := ownData(mr.t, mr.dir, mr.m.sectors*ss)
	for name, md := range mr.m.disks {
		d, ok := disks[name]
		if !ok || d.Parent != md.parent || d.Removed != md.removed || len(d.Children) != len(mr.m.children(name)) {
			return mismatch("disk %s: %+v, model parent %q removed %v", name, d, md.parent, md.removed)
		}
		if md.removed {
			continue
		}
		for sec := int64(0); sec < mr.m.sectors; sec++ {
			if !bytes.Equal(own.view(name, sec), tokenBytes(mr.m.view(name, sec))) {
				return mismatch("view of %s sector %d", name, sec)
			}
		}
	}
	return nil
}
