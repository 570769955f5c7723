package sparse

import (
	"bytes"
	"context"
	"crypto/sha512"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

const blk = 4096

// model is a file described block by block: nil = hole, else the block bytes.
type model [][]byte

func newFile(t testing.TB, name string, blocks int) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(int64(blocks) * blk); err != nil {
		t.Fatal(err)
	}
	return f
}

func fill(seed uint64) []byte {
	b := make([]byte, blk)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i < blk; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// applyOps writes and punches blocks of f following ops (two bytes per op:
// kind+length, block index) and returns the model of the result.
func applyOps(t testing.TB, f *os.File, blocks int, ops []byte) model {
	t.Helper()
	m := make(model, blocks)
	for i := 0; i+1 < len(ops); i += 2 {
		start := int(ops[i+1]) % blocks
		n := 1 + int(ops[i]>>1)%4
		n = min(n, blocks-start)
		for b := start; b < start+n; b++ {
			if ops[i]&1 == 0 {
				m[b] = fill(uint64(i*1000 + b))
				if _, err := f.WriteAt(m[b], int64(b)*blk); err != nil {
					t.Fatal(err)
				}
			} else {
				m[b] = nil
			}
		}
		if ops[i]&1 == 1 {
			if err := PunchHole(f, int64(start)*blk, int64(n)*blk); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m
}

func (m model) extents() []Extent {
	var out []Extent
	for b, d := range m {
		if d != nil {
			out = appendMerged(out, Extent{Offset: int64(b) * blk, Length: blk})
		}
	}
	return out
}

func (m model) bytes() []byte {
	out := make([]byte, len(m)*blk)
	for b, d := range m {
		copy(out[b*blk:], d)
	}
	return out
}

func readAll(t testing.TB, f *os.File) []byte {
	t.Helper()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

func sameExtents(a, b []Extent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWalkDataMatchesModel(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		ops := make([]byte, 2*(1+r.IntN(40)))
		for i := range ops {
			ops[i] = byte(r.Uint32())
		}
		f := newFile(t, "f", 64)
		m := applyOps(t, f, 64, ops)
		got, err := DataExtents(f, 0, 64*blk)
		if err != nil {
			t.Fatal(err)
		}
		if want := m.extents(); !sameExtents(got, want) {
			t.Fatalf("seed %d: extents %v, want %v", seed, got, want)
		}
		if !bytes.Equal(readAll(t, f), m.bytes()) {
			t.Fatalf("seed %d: content differs from model", seed)
		}
	}
}

func TestWalkDataClipsAndStops(t *testing.T) {
	f := newFile(t, "f", 16)
	applyOps(t, f, 16, []byte{6, 2, 6, 10}) // blocks 2-5 and 10-13 are data
	got, err := DataExtents(f, 3*blk+100, 11*blk)
	if err != nil {
		t.Fatal(err)
	}
	want := []Extent{{3*blk + 100, 3*blk - 100}, {10 * blk, blk}}
	if !sameExtents(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	stop := errors.New("stop")
	calls := 0
	err = WalkData(f, 0, 16*blk, func(Extent) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("walk: err %v calls %d", err, calls)
	}
	if _, err := DataExtents(f, -1, 5); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("negative start: %v", err)
	}
	if got, err := DataExtents(f, 20*blk, 30*blk); err != nil || len(got) != 0 {
		t.Fatalf("beyond EOF: %v %v", got, err)
	}
}

func TestFiemapAgreesWithSeekData(t *testing.T) {
	f := newFile(t, "f", 64)
	applyOps(t, f, 64, []byte{0, 1, 6, 7, 2, 20, 1, 21, 7, 40, 0, 63})
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	fm, err := FiemapExtents(f, 0, 64*blk)
	if errors.Is(err, ErrFiemapUnsupported) {
		t.Skip("filesystem has no FIEMAP")
	}
	if err != nil {
		t.Fatal(err)
	}
	sd, err := DataExtents(f, 0, 64*blk)
	if err != nil {
		t.Fatal(err)
	}
	if !sameExtents(fm, sd) {
		t.Fatalf("fiemap %v, seek_data %v", fm, sd)
	}
}

func TestPunchHole(t *testing.T) {
	f := newFile(t, "f", 8)
	m := applyOps(t, f, 8, []byte{6, 0, 6, 4})
	if err := PunchHole(f, 2*blk, 3*blk); err != nil {
		t.Fatal(err)
	}
	m[2], m[3], m[4] = nil, nil, nil
	if !bytes.Equal(readAll(t, f), m.bytes()) {
		t.Fatal("content after punch")
	}
	if st, _ := f.Stat(); st.Size() != 8*blk {
		t.Fatalf("size changed to %d", st.Size())
	}
	if err := PunchHole(f, -1, 1); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("negative: %v", err)
	}
	if err := PunchHole(f, 100*blk, blk); err != nil {
		t.Fatalf("beyond EOF: %v", err)
	}
}

func TestCopyFile(t *testing.T) {
	src := newFile(t, "src", 64)
	m := applyOps(t, src, 64, []byte{6, 3, 2, 30, 7, 31, 0, 63})
	dst := filepath.Join(t.TempDir(), "dst")
	if err := os.WriteFile(dst, bytes.Repeat([]byte{1}, 70*blk), 0o600); err != nil {
		t.Fatal(err)
	}
	var last [2]int64
	if err := CopyFile(context.Background(), dst, src.Name(), func(d, tot int64) { last = [2]int64{d, tot} }); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !bytes.Equal(readAll(t, d), m.bytes()) {
		t.Fatal("copy content differs")
	}
	ext, _ := DataExtents(d, 0, 64*blk)
	if !sameExtents(ext, m.extents()) {
		t.Fatalf("copy extents %v, want %v", ext, m.extents())
	}
	if last[0] != last[1] || last[1] != dataLen(m) {
		t.Fatalf("progress %v, want total %d", last, dataLen(m))
	}
}

func dataLen(m model) int64 {
	var n int64
	for _, d := range m {
		if d != nil {
			n += blk
		}
	}
	return n
}

func overlay(child, parent model) model {
	out := make(model, max(len(child), len(parent)))
	copy(out, parent)
	for b, d := range child {
		if d != nil {
			out[b] = d
		}
	}
	return out
}

func TestFoldFile(t *testing.T) {
	for seed := uint64(0); seed < 10; seed++ {
		r := rand.New(rand.NewPCG(seed, 2))
		pBlocks, cBlocks := 32, 32+8*r.IntN(2) // child may be larger (expansion)
		parent, child := newFile(t, "p", pBlocks), newFile(t, "c", cBlocks)
		pm := applyOps(t, parent, pBlocks, randOps(r, 20))
		cm := applyOps(t, child, cBlocks, randOps(r, 20))
		if err := FoldFile(context.Background(), child, parent, nil); err != nil {
			t.Fatal(err)
		}
		want := overlay(cm, pm)
		if !bytes.Equal(readAll(t, parent), want.bytes()) {
			t.Fatalf("seed %d: folded content differs", seed)
		}
		ext, _ := DataExtents(parent, 0, int64(cBlocks)*blk)
		if !sameExtents(ext, want.extents()) {
			t.Fatalf("seed %d: folded extents %v want %v", seed, ext, want.extents())
		}
	}
}

func TestFoldFileCancelled(t *testing.T) {
	parent, child := newFile(t, "p", 8), newFile(t, "c", 8)
	applyOps(t, child, 8, []byte{6, 0})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := FoldFile(ctx, child, parent, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func randOps(r *rand.Rand, n int) []byte {
	ops := make([]byte, 2*n)
	for i := range ops {
		ops[i] = byte(r.Uint32())
	}
	return ops
}

func TestPruneFile(t *testing.T) {
	parent, child := newFile(t, "p", 32), newFile(t, "c", 40)
	pm := applyOps(t, parent, 32, []byte{6, 0, 6, 8, 6, 16, 6, 24})
	cm := applyOps(t, child, 40, []byte{2, 2, 4, 10, 0, 31, 6, 34})
	if err := PruneFile(context.Background(), parent, child, nil); err != nil {
		t.Fatal(err)
	}
	want := make(model, 40)
	copy(want, pm)
	for b, d := range cm {
		if d != nil {
			want[b] = nil
		}
	}
	if !bytes.Equal(readAll(t, parent), want.bytes()) {
		t.Fatal("pruned content differs")
	}
	// The view child-over-parent is unchanged by the prune.
	if !bytes.Equal(overlay(cm, want).bytes(), overlay(cm, pm).bytes()) {
		t.Fatal("view changed")
	}
	big, small := newFile(t, "big", 8), newFile(t, "small", 4)
	if err := PruneFile(context.Background(), big, small, nil); err == nil {
		t.Fatal("parent larger than child must fail")
	}
}

func TestChecksum(t *testing.T) {
	a, b := newFile(t, "a", 16), newFile(t, "b", 16)
	applyOps(t, a, 16, []byte{6, 2, 0, 9})
	content := readAll(t, a)
	if _, err := b.WriteAt(content, 0); err != nil { // same bytes, fully allocated
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{0, 16 * blk}, {blk + 7, 5*blk + 3}, {9 * blk, 0}, {15 * blk, 4 * blk}} {
		ca, err := Checksum(a, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		cb, _ := Checksum(b, r[0], r[1])
		want := make([]byte, r[1])
		copy(want, content[min(r[0], int64(len(content))):])
		sum := sha512.Sum512(want)
		if !bytes.Equal(ca, cb) || !bytes.Equal(ca, sum[:]) {
			t.Fatalf("range %v: checksums differ", r)
		}
	}
	if _, err := b.WriteAt([]byte{0xff}, 3*blk); err != nil {
		t.Fatal(err)
	}
	ca, _ := Checksum(a, 0, 16*blk)
	cb, _ := Checksum(b, 0, 16*blk)
	if bytes.Equal(ca, cb) {
		t.Fatal("checksum did not change with content")
	}
}

func TestCopyRangeBuffered(t *testing.T) {
	src, dst := newFile(t, "s", 8), newFile(t, "d", 8)
	m := applyOps(t, src, 8, []byte{6, 1})
	if err := copyRangeBuffered(dst, src, 0, 10*blk); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, dst), m.bytes()) {
		t.Fatal("buffered copy differs")
	}
}

// FuzzWalkData checks the extent walk against a block model for arbitrary
// sequences of writes and punches.
func FuzzWalkData(f *testing.F) {
	f.Add([]byte{0, 1, 1, 1})
	f.Add([]byte{6, 0, 7, 2, 0, 31, 3, 30})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 200 {
			ops = ops[:200]
		}
		file := newFile(t, "f", 32)
		m := applyOps(t, file, 32, ops)
		got, err := DataExtents(file, 0, 32*blk)
		if err != nil {
			t.Fatal(err)
		}
		if want := m.extents(); !sameExtents(got, want) {
			t.Fatalf("extents %v, want %v", got, want)
		}
	})
}
