package syncagent

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	gosync "sync"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

// writeDense creates a file of size bytes of random data (no holes).
func writeDense(t *testing.T, path string, size int, seed int64) {
	t.Helper()
	buf := make([]byte, size)
	rand.New(rand.NewSource(seed)).Read(buf)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A limited transfer takes at least its bytes over the limit (the bucket
// starts empty) and still delivers the file unchanged.
func TestSendFileBandwidthLimit(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "volume-snap-p.img"), filepath.Join(dir, "dst.img")
	const size, limit = 8 << 20, 16 << 20
	writeDense(t, src, size, 1)
	r := receive(t, dst)
	t0 := time.Now()
	st, err := SendFile(context.Background(), src, r.ln.Addr().String(), SendOptions{DirectIO: true, BandwidthLimit: limit})
	took := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, src, dst)
	if st.Sent != size {
		t.Fatalf("sent %d bytes, want %d", st.Sent, size)
	}
	if want := time.Duration(float64(size) / limit * float64(time.Second)); took < want*9/10 || took > 10*want {
		t.Fatalf("8 MiB at 16 MiB/s took %v, want about %v", took, want)
	}
}

// Receivers sharing one pacer hold two unlimited senders to the limit
// together.
func TestReceiversSharePace(t *testing.T) {
	dir := t.TempDir()
	const size, limit = 4 << 20, 16 << 20
	pace := newPacer(limit)
	var wg gosync.WaitGroup
	errs := make(chan error, 2)
	t0 := time.Now()
	for i := 0; i < 2; i++ {
		src, dst := filepath.Join(dir, "src"+string(rune('a'+i))), filepath.Join(dir, "dst"+string(rune('a'+i)))
		writeDense(t, src, size, int64(i))
		r := receive(t, dst)
		r.SetPace(pace)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := SendFile(context.Background(), src, r.ln.Addr().String(), SendOptions{})
			if err == nil {
				err = r.Err()
			}
			errs <- err
		}()
	}
	wg.Wait()
	took := time.Since(t0)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		sameFiles(t, filepath.Join(dir, "src"+string(rune('a'+i))), filepath.Join(dir, "dst"+string(rune('a'+i))))
	}
	if want := time.Duration(float64(2*size) / limit * float64(time.Second)); took < want*9/10 {
		t.Fatalf("2 x 4 MiB through a shared 16 MiB/s pacer took %v, want at least %v", took, want)
	}
}

// No limit means no pacer; a paced wait ends with its context.
func TestPacer(t *testing.T) {
	for _, n := range []int64{0, -1} {
		if newPacer(n) != nil {
			t.Fatalf("newPacer(%d) is not nil", n)
		}
	}
	if err := waitPace(context.Background(), nil, 1<<30); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if err := waitPace(ctx, newPacer(1<<20), 4<<20); err == nil || time.Since(t0) > 2*time.Second {
		t.Fatalf("a 4 s wait under a 50 ms deadline: %v after %v", err, time.Since(t0))
	}
}

// A writeData that names its data ranges counts only those bytes against
// the limit; one that does not counts its whole interval.
func TestDataBytes(t *testing.T) {
	iv := Interval{4096, 4096 + 1<<20}
	ranges := []sparse.Extent{{Offset: 0, Length: 4096}, {Offset: 65536, Length: 8192}}
	if n := dataBytes(iv, ranges, true); n != 12288 {
		t.Fatalf("named ranges: %d bytes, want 12288", n)
	}
	if n := dataBytes(iv, nil, false); n != 1<<20 {
		t.Fatalf("no ranges: %d bytes, want %d", n, 1<<20)
	}
}
