package replica

import "sync/atomic"

// locIndex is the location index: for every SectorSize sector of the volume,
// the layer that holds its newest data. 0 means no layer holds it (the sector
// reads as zeroes); i > 0 is the store's layers[i] (1 = oldest, head = last).
// One byte per sector as Longhorn's diffDisk.location, packed four to a
// 32-bit word so that concurrent writers (WriteAt under the shared lock) and
// readers use atomic word operations and never race.
type locIndex struct {
	words   []atomic.Uint32
	sectors int64
}

func newLocIndex(sectors int64) *locIndex {
	return &locIndex{words: make([]atomic.Uint32, (sectors+3)/4), sectors: sectors}
}

const bytesOf1 = 0x01010101

// get returns the layer of sector s.
func (x *locIndex) get(s int64) uint8 {
	return uint8(x.words[s>>2].Load() >> (8 * uint(s&3)))
}

// set marks sectors [s, s+n) as held by layer v. Whole words are stored,
// partial words updated with compare-and-swap, so concurrent set calls on
// neighbouring sectors do not lose each other's updates.
func (x *locIndex) set(s, n int64, v uint8) {
	end := s + n
	for s < end {
		if s&3 == 0 && end-s >= 4 {
			x.words[s>>2].Store(uint32(v) * bytesOf1)
			s += 4
			continue
		}
		hi := min(end, (s|3)+1)
		var mask, val uint32
		for i := s; i < hi; i++ {
			sh := 8 * uint(i&3)
			mask |= 0xff << sh
			val |= uint32(v) << sh
		}
		w := &x.words[s>>2]
		for {
			old := w.Load()
			if w.CompareAndSwap(old, old&^mask|val) {
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
	full := uint32(v) * bytesOf1
	i := s + 1
	for i < end {
		if i&3 == 0 && end-i >= 4 {
			if x.words[i>>2].Load() == full {
				i += 4
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

// remap replaces every entry v by table[v]. Callers hold the store's
// exclusive lock.
func (x *locIndex) remap(table *[256]uint8) {
	for i := range x.words {
		w := x.words[i].Load()
		if w == 0 && table[0] == 0 {
			continue
		}
		n := uint32(table[uint8(w)]) | uint32(table[uint8(w>>8)])<<8 |
			uint32(table[uint8(w>>16)])<<16 | uint32(table[uint8(w>>24)])<<24
		x.words[i].Store(n)
	}
}

// grown returns a copy of x covering sectors (>= x.sectors); the new
// sectors are 0.
func (x *locIndex) grown(sectors int64) *locIndex {
	y := newLocIndex(sectors)
	for i := range x.words {
		y.words[i].Store(x.words[i].Load())
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
