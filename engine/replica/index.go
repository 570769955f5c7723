package replica

import (
	"sync/atomic"
	"unsafe"

	"github.com/longhorn-go/longhorn/engine/shm"
)

// locIndex is the location index: for every SectorSize sector of the volume,
// the layer that holds its newest data. 0 means no layer holds it (the sector
// reads as zeroes); i > 0 is the store's layers[i] (1 = oldest, head = last).
// One byte per sector as Longhorn's diffDisk.location (256 MiB per TiB),
// packed eight to a 64-bit word: concurrent writers (WriteAt under the shared
// lock) and readers use atomic word operations and never race, and scans
// (remap after a coalesce, prune) skip empty or uniform words whole.
//
// touched has one bit per index page (pageWords words, 16 MiB of volume),
// set before the first store into that page: scans skip pages never written,
// which are zero and, as untouched memory, also costly to fault in.
//
// The words, followed by the touched bits, live in a sealed shared memory
// region (package shm) when one can be made (up to shm.MaxMapSize, about a
// 4 TiB volume): the engine on the same node maps it for direct reads and
// writes (see ReadView). Otherwise they are ordinary memory.
type locIndex struct {
	words   []atomic.Uint64
	touched []atomic.Uint64
	sectors int64
	// region holds words when shared (nil otherwise); it must stay
	// reachable while words is used, since words points into its mapping.
	region *shm.Region
}

const (
	perWord   = 8
	bytesOf1  = 0x0101010101010101
	pageWords = 512 // 4 KiB of index
)

func newLocIndex(sectors int64) *locIndex {
	words := (sectors + perWord - 1) / perWord
	pages := (words + pageWords - 1) / pageWords
	tw := (pages + 63) / 64
	x := &locIndex{sectors: sectors}
	// The region holds the words, then the touched bits (so a direct
	// writer, which maps it, marks pages touched as WriteAt does).
	if n := (words + tw) * 8; words > 0 && n <= shm.MaxMapSize {
		if r, err := shm.Create("longhorn-replica-index", int((n+4095)&^4095)); err == nil {
			mem, _ := r.Slice(0, uint32(n))
			all := unsafe.Slice((*atomic.Uint64)(unsafe.Pointer(unsafe.SliceData(mem))), words+tw)
			x.words, x.touched = all[:words:words], all[words:]
			x.region = r
		}
	}
	if x.words == nil {
		x.words = make([]atomic.Uint64, words)
		x.touched = make([]atomic.Uint64, tw)
	}
	return x
}

// touch marks the index pages of sectors [s, end) as written.
func (x *locIndex) touch(s, end int64) {
	for p := s / perWord / pageWords; p <= (end-1)/perWord/pageWords; p++ {
		b, bit := &x.touched[p/64], uint64(1)<<(p%64)
		if b.Load()&bit == 0 {
			b.Or(bit)
		}
	}
}

func (x *locIndex) pageTouched(p int64) bool {
	return x.touched[p/64].Load()&(uint64(1)<<(p%64)) != 0
}

// get returns the layer of sector s.
func (x *locIndex) get(s int64) uint8 {
	return uint8(x.words[s/perWord].Load() >> (8 * uint(s%perWord)))
}

// set marks sectors [s, s+n) as held by layer v. Whole words are stored,
// partial words updated with compare-and-swap, so concurrent set calls on
// neighbouring sectors do not lose each other's updates.
func (x *locIndex) set(s, n int64, v uint8) {
	end := s + n
	if n <= 0 {
		return
	}
	x.touch(s, end)
	full := uint64(v) * bytesOf1
	for s < end {
		if s%perWord == 0 && end-s >= perWord {
			x.words[s/perWord].Store(full)
			s += perWord
			continue
		}
		hi := min(end, (s/perWord+1)*perWord)
		var mask uint64
		for i := s; i < hi; i++ {
			mask |= 0xff << (8 * uint(i%perWord))
		}
		w := &x.words[s/perWord]
		for {
			old := w.Load()
			if w.CompareAndSwap(old, old&^mask|full&mask) {
				break
			}
		}
		s = hi
	}
}

// run returns the layer of sector s and the end (exclusive, at most end) of
// the run of sectors from s that share that layer.
func (x *locIndex) run(s, end int64) (uint8, int64) {
	v := x.get(s)
	full := uint64(v) * bytesOf1
	i := s + 1
	for i < end {
		if v == 0 && i%(perWord*pageWords) == 0 && end-i >= perWord*pageWords && !x.pageTouched(i/perWord/pageWords) {
			i += perWord * pageWords
			continue
		}
		if i%perWord == 0 && end-i >= perWord {
			if x.words[i/perWord].Load() == full {
				i += perWord
				continue
			}
		}
		if x.get(i) != v {
			break
		}
		i++
	}
	return v, i
}

// remap replaces every entry v by table[v]; table[0] must be 0. Callers
// hold the store's exclusive lock.
func (x *locIndex) remap(table *[256]uint8) {
	for p := int64(0); p*pageWords < int64(len(x.words)); p++ {
		if x.pageTouched(p) {
			x.remapWords(table, p*pageWords, min((p+1)*pageWords, int64(len(x.words))))
		}
	}
}

func (x *locIndex) remapWords(table *[256]uint8, from, to int64) {
	for i := from; i < to; i++ {
		w := x.words[i].Load()
		if w == 0 {
			continue
		}
		if w == uint64(uint8(w))*bytesOf1 { // one layer for all eight sectors
			x.words[i].Store(uint64(table[uint8(w)]) * bytesOf1)
			continue
		}
		var n uint64
		for b := uint(0); b < 64; b += 8 {
			n |= uint64(table[uint8(w>>b)]) << b
		}
		x.words[i].Store(n)
	}
}

// grown returns a copy of x covering sectors (>= x.sectors); the new
// sectors are 0.
func (x *locIndex) grown(sectors int64) *locIndex {
	y := newLocIndex(sectors)
	for i := range x.touched {
		y.touched[i].Store(x.touched[i].Load())
	}
	for p := int64(0); p*pageWords < int64(len(x.words)); p++ {
		if x.pageTouched(p) {
			for i := p * pageWords; i < min((p+1)*pageWords, int64(len(x.words))); i++ {
				y.words[i].Store(x.words[i].Load())
			}
		}
	}
	return y
}

// count returns how many sectors hold layer v (tests and statistics).
func (x *locIndex) count(v uint8) int64 {
	var n int64
	for s := int64(0); s < x.sectors; {
		l, e := x.run(s, x.sectors)
		if l == v {
			n += e - s
		}
		s = e
	}
	return n
}
