package scsi

import (
	"math/bits"
	"sync"
)

const (
	lockStripes     = 256
	lockRegionShift = 16 // 64 KiB regions
)

// rangeLocks makes COMPARE AND WRITE atomic against writes to the same
// blocks: writes hold the stripes of their byte range shared, COMPARE AND
// WRITE holds them exclusive. Stripes are taken in ascending order, so two
// holders never deadlock.
type rangeLocks struct {
	stripes [lockStripes]sync.RWMutex
}

type stripeSet [lockStripes / 64]uint64

func stripesOf(off, n int64) stripeSet {
	var s stripeSet
	if n <= 0 {
		return s
	}
	first := off >> lockRegionShift
	last := (off + n - 1) >> lockRegionShift
	if last-first+1 >= lockStripes {
		for i := range s {
			s[i] = ^uint64(0)
		}
		return s
	}
	for r := first; r <= last; r++ {
		i := int(r % lockStripes)
		s[i/64] |= 1 << (i % 64)
	}
	return s
}

func (s *stripeSet) each(f func(i int)) {
	for w, word := range s {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			f(w*64 + b)
			word &^= 1 << b
		}
	}
}

// lockShared takes the stripes of [off, off+n) shared and returns the unlock.
func (l *rangeLocks) lockShared(off, n int64) stripeSet {
	s := stripesOf(off, n)
	s.each(func(i int) { l.stripes[i].RLock() })
	return s
}

func (l *rangeLocks) unlockShared(s stripeSet) {
	s.each(func(i int) { l.stripes[i].RUnlock() })
}

// lockExclusive takes the stripes of [off, off+n) exclusive.
func (l *rangeLocks) lockExclusive(off, n int64) stripeSet {
	s := stripesOf(off, n)
	s.each(func(i int) { l.stripes[i].Lock() })
	return s
}

func (l *rangeLocks) unlockExclusive(s stripeSet) {
	s.each(func(i int) { l.stripes[i].Unlock() })
}
