package dataconn

import (
	"sync/atomic"

	"github.com/longhorn-go/longhorn/engine/rawio"
)

// WriteDirect writes p at off (both multiples of 4096) straight into the
// head of a local replica whose current view came with a write slot (see
// the top of direct.go), and reports whether it did. A write it did is
// complete as a replica's acknowledged write is: data in the head file,
// index updated. Otherwise the caller sends the write to the replica
// (WriteAt/Start), which may rewrite bytes this call already put in the
// head.
func (c *Client) WriteDirect(p []byte, off int64) bool {
	if c.withView(func(v *view) bool { return v.write(p, off) }) {
		c.direct.writes.Add(1)
		return true
	}
	return false
}

// DirectWrites returns how many writes WriteDirect served.
func (c *Client) DirectWrites() int64 { return c.direct.writes.Load() }

// write does one direct write (see WriteDirect); false when the view has no
// write slot, the range is not aligned or outside the view, the view is
// stale (marked) or a pwrite failed.
func (v *view) write(p []byte, off int64) bool {
	first, end := off/4096, (off+int64(len(p)))/4096
	if v.slot == nil || len(p) == 0 || off%4096 != 0 || len(p)%4096 != 0 || first < 0 || end > v.info.sectors {
		return false
	}
	v.slot.Add(1)
	defer v.slot.Add(-1)
	// After the slot is raised: the replica's exclusive sections either
	// moved the number already or wait for the slot.
	if v.seq.Load() != v.info.seq {
		v.stale.Store(true)
		return false
	}
	head := v.files[len(v.files)-1]
	for done := 0; done < len(p); {
		at := off + int64(done)
		n := min(len(p)-done, int(writeChunk-at%writeChunk))
		w, err := rawio.Pwrite(head, p[done:done+n], at)
		if err != nil {
			return false
		}
		done += w
	}
	v.setIndex(first, end, uint8(len(v.files)))
	return true
}

// setIndex marks sectors [s, end) as held by layer l, as the replica's
// locIndex.set does: the pages' bits first, whole words stored, partial
// words updated with compare-and-swap.
func (v *view) setIndex(s, end int64, l uint8) {
	const perWord, pageWords = 8, 512
	for pg := s / perWord / pageWords; pg <= (end-1)/perWord/pageWords; pg++ {
		b, bit := &v.touched[pg/64], uint64(1)<<(pg%64)
		if b.Load()&bit == 0 {
			b.Or(bit)
		}
	}
	full := uint64(l) * 0x0101010101010101
	for s < end {
		if s%perWord == 0 && end-s >= perWord {
			v.words[s/perWord].Store(full)
			s += perWord
			continue
		}
		hi := min(end, (s/perWord+1)*perWord)
		var mask uint64
		for i := s; i < hi; i++ {
			mask |= 0xff << (8 * uint(i%perWord))
		}
		casMasked(&v.words[s/perWord], mask, full)
		s = hi
	}
}

func casMasked(w *atomic.Uint64, mask, val uint64) {
	for {
		old := w.Load()
		if w.CompareAndSwap(old, old&^mask|val&mask) {
			return
		}
	}
}
