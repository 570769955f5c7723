package replica

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
)

// An in-memory model of a replica: a tree of disks, each a sparse map from
// sector to a token (the data written there). Snapshot, revert, expansion,
// unmap and purge are modelled exactly as the package doc specifies them.
type mDisk struct {
	parent  string
	removed bool
	data    map[int64]uint64
}

type model struct {
	disks     map[string]*mDisk
	head      string
	headNum   int
	sectors   int64
	unmapMark bool
	maxCount  int
}

func newModel(sectors int64, maxCount int, unmapMark bool) *model {
	return &model{disks: map[string]*mDisk{HeadFileName(0): {data: map[int64]uint64{}}},
		head: HeadFileName(0), sectors: sectors, maxCount: maxCount, unmapMark: unmapMark}
}

func (m *model) children(name string) []string {
	var out []string
	for n, d := range m.disks {
		if d.parent == name {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// chain returns the live chain, oldest first.
func (m *model) chain() []string {
	var out []string
	for cur := m.head; cur != ""; cur = m.disks[cur].parent {
		out = append(out, cur)
	}
	slices.Reverse(out)
	return out
}

func (m *model) view(disk string, sec int64) uint64 {
	for cur := disk; cur != ""; cur = m.disks[cur].parent {
		if tok, ok := m.disks[cur].data[sec]; ok {
			return tok
		}
	}
	return 0
}

func (m *model) countUsage() int {
	n := 0
	for name, d := range m.disks {
		if name != m.head && !d.removed {
			n++
		}
	}
	return n
}

// snapshotErr predicts the error of Snapshot/Expand creating snapshot name.
func (m *model) snapshotErr(name string) error {
	switch {
	case m.disks[SnapshotFileName(name)] != nil:
		return ErrSnapshotExists
	case m.countUsage() >= m.maxCount:
		return ErrSnapshotCountLimit
	case len(m.chain()) >= MaxChainLength:
		return ErrChainTooLong
	}
	return nil
}

func (m *model) snapshot(name string) {
	snap := SnapshotFileName(name)
	m.disks[snap] = m.disks[m.head]
	delete(m.disks, m.head)
	for _, d := range m.disks {
		if d.parent == m.head {
			d.parent = snap
		}
	}
	m.headNum++
	m.head = HeadFileName(m.headNum)
	m.disks[m.head] = &mDisk{parent: snap, data: map[int64]uint64{}}
}

func (m *model) revert(target string) {
	delete(m.disks, m.head)
	m.headNum++
	m.head = HeadFileName(m.headNum)
	m.disks[m.head] = &mDisk{parent: target, data: map[int64]uint64{}}
}

// unmap applies UnmapAt's rule and returns the sectors punched.
func (m *model) unmap(first, n int64) int64 {
	chain := m.chain()
	lowest := len(chain) - 1
	for i := lowest - 1; i >= 0; i-- {
		name := chain[i]
		if len(m.children(name)) > 1 {
			break
		}
		if m.unmapMark {
			m.disks[name].removed = true
		}
		if !m.disks[name].removed {
			break
		}
		lowest = i
	}
	var punched int64
	for sec := first; sec < first+n; sec++ {
		top := -1
		for i := len(chain) - 1; i >= 0; i-- {
			if _, ok := m.disks[chain[i]].data[sec]; ok {
				top = i
				break
			}
		}
		if top < lowest {
			continue // nothing unmappable holds it (or a retained layer is on top)
		}
		covered := false
		for i := 0; i < lowest; i++ {
			if _, ok := m.disks[chain[i]].data[sec]; ok {
				covered = true
			}
		}
		if covered {
			continue
		}
		for i := lowest; i < len(chain); i++ {
			delete(m.disks[chain[i]].data, sec)
		}
		punched++
	}
	return punched
}

// purgeOne mirrors PurgeSnapshot's plan and returns the action.
func (m *model) purgeOne(disk string) string {
	kids := m.children(disk)
	switch {
	case len(kids) == 0:
		delete(m.disks, disk)
		return ActionRemove
	case len(kids) > 1:
		return ""
	case kids[0] == m.head:
		for sec := range m.disks[m.head].data {
			delete(m.disks[disk].data, sec)
		}
		return ActionPrune
	}
	p, c := m.disks[disk], m.disks[kids[0]]
	merged := maps.Clone(p.data)
	maps.Copy(merged, c.data)
	c.data, c.parent = merged, p.parent
	delete(m.disks, disk)
	return ActionCoalesce
}

// purgeAll mirrors Purge: passes over the removed disks (live chain oldest
// first, then the rest by name) until nothing is removed or coalesced.
func (m *model) purgeAll() {
	pruned := map[string]bool{}
	for {
		chain := m.chain()
		index := func(n string) int { return slices.Index(chain, n) + 1 }
		var removed []string
		for n, d := range m.disks {
			if d.removed && n != m.head {
				removed = append(removed, n)
			}
		}
		sort.Slice(removed, func(i, j int) bool {
			a, b := index(removed[i]), index(removed[j])
			if a != b {
				return a < b
			}
			return removed[i] < removed[j]
		})
		changed := false
		for _, n := range removed {
			if pruned[n] || m.disks[n] == nil {
				continue
			}
			switch m.purgeOne(n) {
			case ActionPrune:
				pruned[n] = true
			case ActionRemove, ActionCoalesce:
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

var (
	flagModelSeed  = flag.Uint64("replica.seed", 0, "randomized model test: run only this seed")
	flagModelOps   = flag.Int("replica.ops", 0, "randomized model test: operations per seed (default 1200, 300 with -short)")
	flagModelSeeds = flag.Int("replica.seeds", 0, "randomized model test: number of seeds (default 2)")
)

var errModel = errors.New("model mismatch")

func mismatch(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errModel, fmt.Sprintf(format, args...))
}

func pickDisk(r *rand.Rand, m *model, want func(name string, d *mDisk) bool) string {
	var names []string
	for n, d := range m.disks {
		if n != m.head && want(n, d) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return names[r.IntN(len(names))]
}

func snapName(file string) string { n, _ := SnapshotName(file); return n }

func itoa64(v int64) string { return strconv.FormatInt(v, 10) }
