package syncagent

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

func ext(off, n int64) sparse.Extent { return sparse.Extent{Offset: off, Length: n} }

func TestSubtract(t *testing.T) {
	a := []sparse.Extent{ext(0, 10), ext(20, 10), ext(40, 10)}
	b := []sparse.Extent{ext(5, 3), ext(18, 4), ext(25, 20)}
	want := []sparse.Extent{ext(0, 5), ext(8, 2), ext(22, 3), ext(45, 5)}
	if got := subtract(a, b); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := subtract(a, nil); !slices.Equal(got, a) {
		t.Fatalf("minus nothing: %v", got)
	}
	if got := subtract(nil, b); got != nil {
		t.Fatalf("nothing minus: %v", got)
	}
}

func TestSplitPieces(t *testing.T) {
	const c = compareChunk
	src := []sparse.Extent{ext(0, 3*c), ext(4*c, c/2)}
	dst := []sparse.Extent{ext(c/2, 2*c), ext(4*c+c/4, 8*c)}
	want := []piece{
		{ext(0, c/2), false},
		{ext(c/2, c/2), true}, {ext(c, c), true}, {ext(2*c, c/2), true},
		{ext(2*c+c/2, c/2), false},
		{ext(4*c, c/4), false}, {ext(4*c+c/4, c/4), true},
	}
	if got := splitPieces(src, dst); !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if got := splitPieces(src, nil); len(got) != 2 || got[0].compare || got[1].compare {
		t.Fatalf("no receiver data: %v", got)
	}
}

func TestPackWindows(t *testing.T) {
	ps := []piece{{ext(0, packedData+4096), false}, {ext(packedData+8192, 4096), true}}
	ws := packWindows(ps)
	if len(ws) != 2 || len(ws[0]) != 1 || ws[0][0].Length != packedData ||
		!slices.Equal(ws[1], []piece{{ext(packedData, 4096), false}, {ext(packedData+8192, 4096), true}}) {
		t.Fatalf("windows %v", ws)
	}
	many := make([]piece, maxDataRanges+1)
	for i := range many {
		many[i] = piece{Extent: ext(int64(i)*8192, 4096)}
	}
	if ws := packWindows(many); len(ws) != 2 || len(ws[0]) != maxDataRanges {
		t.Fatalf("%d windows, first of %d", len(ws), len(ws[0]))
	}
}

func TestParseRangesAndPacked(t *testing.T) {
	got, err := parseRanges("h", "0+4096,8192+4096", 16384, 4)
	if err != nil || !slices.Equal(got, []sparse.Extent{ext(0, 4096), ext(8192, 4096)}) {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := parseRanges("h", "", 10, 4); got != nil || err != nil {
		t.Fatalf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"x", "0+1,", ",0+1", "0+0", "1+1,0+1", "0+11", "0+1,2+1,4+1,6+1,8+1"} {
		if _, err := parseRanges("h", bad, 10, 4); err == nil || !strings.Contains(err.Error(), "h") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	iv := Interval{100, 200}
	h := http.Header{DataRangesHeader: {"0+10"}, HoleRangesHeader: {"50+50"}, SkippedHeader: {"20"}}
	if p, err := parsePacked(iv, h); err != nil || p.skipped != 20 || len(p.holes) != 1 || len(p.ranges) != 1 {
		t.Fatalf("%+v %v", p, err)
	}
	for _, v := range []string{"-1", "101", "x"} {
		h.Set(SkippedHeader, v)
		if _, err := parsePacked(iv, h); err == nil || !strings.Contains(err.Error(), SkippedHeader) {
			t.Errorf("skipped %q: %v", v, err)
		}
	}
}

// FuzzParsePacked: any writePacked headers parse into sorted, disjoint,
// non-empty ranges inside the interval and a bounded skip count, or an
// error; never a panic.
func FuzzParsePacked(f *testing.F) {
	f.Add("0+4096,8192+4096", "4096+4096", "0", "4096", int64(16384))
	f.Add("9223372036854775807+1", "", "-1", "", int64(10))
	f.Fuzz(func(t *testing.T, data, holes, skipped, local string, n int64) {
		if n < 0 {
			return
		}
		h := http.Header{DataRangesHeader: {data}, HoleRangesHeader: {holes}, SkippedHeader: {skipped}, LocalBytesHeader: {local}}
		p, err := parsePacked(Interval{0, n}, h)
		if err != nil {
			return
		}
		for _, rs := range [][]sparse.Extent{p.ranges, p.holes} {
			end := int64(0)
			for _, e := range rs {
				if e.Length <= 0 || e.Offset < end || e.Length > n-e.Offset {
					t.Fatalf("bad range %+v in %d", e, n)
				}
				end = e.End()
			}
		}
		if p.skipped < 0 || p.local < 0 || p.skipped+p.local > n || extentsLen(p.ranges) > MaxWriteData {
			t.Fatalf("accepted %+v", p)
		}
	})
}

// writeAt writes n random bytes (or zeroes) at off of path.
func writeAt(t *testing.T, path string, off, n int64, zero bool) []byte {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if !zero {
		_, _ = rand.Read(b)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSendFilePacked: a fragmented file to a receiver whose file holds
// some of the same data, some other data where the source has data, and
// data where the source has holes. The receiver ends with the source's
// content and extent map; only the differing data is sent, only the
// receiver's data in source holes is punched, and the requests are few.
func TestSendFilePacked(t *testing.T) {
	noLocal = true
	defer func() { noLocal = false }()
	testSendFilePacked(t, false)
}

// TestSendFileLocal: the same, the sender writing the receiver's file
// itself (both on this kernel): no extent map, checksums or data over
// HTTP, one progress request per window.
func TestSendFileLocal(t *testing.T) {
	testSendFilePacked(t, true)
}

func testSendFilePacked(t *testing.T, local bool) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "volume-snap-p.img"), filepath.Join(dir, "dst", "volume-snap-p.img")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	const k, size = 64 << 10, 32 << 20
	for _, p := range []string{src, dst} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
	}
	var extents int64
	for off := int64(0); off < size; off += 2 * k { // 64 KiB data, 64 KiB hole
		b := writeAt(t, src, off, k, off%(16*k) == 0) // some extents of zeroes
		extents++
		switch (off / (2 * k)) % 8 {
		case 0, 1: // the receiver has the same bytes
			wf, _ := os.OpenFile(dst, os.O_RDWR, 0)
			_, _ = wf.WriteAt(b, off)
			wf.Close()
		case 2: // other bytes
			writeAt(t, dst, off, k, false)
		case 3: // half of it, other bytes
			writeAt(t, dst, off+k/2, k/2, false)
		case 4: // data in the hole after it
			writeAt(t, dst, off+k, k, false)
		case 5: // the same bytes but one 4 KiB block (a local transfer writes only that block)
			c := slices.Clone(b)
			c[5*diffBlock+7] ^= 0xff
			wf, _ := os.OpenFile(dst, os.O_RDWR, 0)
			_, _ = wf.WriteAt(c, off)
			wf.Close()
		}
	}
	r := receive(t, dst)
	addr, ops := countingProxy(t, r)
	st, err := SendFile(context.Background(), src, addr, SendOptions{DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, src, dst)
	if a, b := dataExtents(t, src), dataExtents(t, dst); !slices.Equal(a, b) {
		t.Fatalf("extent maps differ:\n%v\n%v", a, b)
	}
	per := extents / 8
	wantSkipped, wantSent := 2*per*k, 6*per*k
	if local { // case 5: all but the changed block skipped
		wantSkipped, wantSent = wantSkipped+per*(k-diffBlock), wantSent-per*(k-diffBlock)
	}
	if st.Skipped != wantSkipped {
		t.Errorf("skipped %d bytes, want %d (the equal extents and, local, blocks)", st.Skipped, wantSkipped)
	}
	if st.Sent != wantSent {
		t.Errorf("sent %d bytes, want %d", st.Sent, wantSent)
	}
	if want := per * k; st.Holes != want {
		t.Errorf("punched %d bytes, want %d (the receiver's data in source holes)", st.Holes, want)
	}
	if n := ops(); n["writeData"]+n["sendHole"]+n["getChecksum"] != 0 || n["writePacked"] > 8 ||
		(!local && n["extentMap"] != 1) || (local && n["extentMap"]+n["getChecksums"] != 0) {
		t.Fatalf("requests %v", n)
	}
	// A local copy does not hash on the way (the agents hash both files
	// afterwards: enginetest's TestRebuildHashesLocalCopyAfterwards); over HTTP close carries the checksum.
	_, _, srcErr := CurrentRecorded(src)
	_, _, dstErr := CurrentRecorded(dst)
	if st.Unhashed != local || (srcErr == nil) == local || (dstErr == nil) == local {
		t.Fatalf("local %v: Unhashed %v, source record: %v, receiver record: %v", local, st.Unhashed, srcErr, dstErr)
	}
	if (st.Mirror == dst) != local || (!local && st.Mirror != "") {
		t.Fatalf("local %v: Mirror %q, receiver's file %q", local, st.Mirror, dst)
	}
	if r.Processed() != st.Sent+st.Skipped {
		t.Fatalf("receiver processed %d, want %d", r.Processed(), st.Sent+st.Skipped)
	}
	// A new file: no extent map, no checksums, data only.
	fresh := filepath.Join(dir, "dst", "fresh.img")
	r2 := receive(t, fresh)
	addr2, ops2 := countingProxy(t, r2)
	if _, err := SendFile(context.Background(), src, addr2, SendOptions{DirectIO: true}); err != nil {
		t.Fatal(err)
	}
	if err := r2.Err(); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, src, fresh)
	if n := ops2(); n["extentMap"]+n["getChecksums"] != 0 || n["writePacked"] != 4 {
		t.Fatalf("fresh file requests %v", n)
	}
	if a, b := dataExtents(t, src), dataExtents(t, fresh); !slices.Equal(a, b) {
		t.Fatal("fresh file's extent map differs")
	}
}

// countingProxy serves r's requests through a proxy that counts them by
// operation; it returns the proxy's HOST:PORT and the counts so far.
func countingProxy(t *testing.T, r *Receiver) (string, func() map[string]int) {
	var mu sync.Mutex
	ops := map[string]int{}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		ops[strings.TrimPrefix(req.URL.Path, ssyncPrefix)]++
		mu.Unlock()
		r.srv.Handler.ServeHTTP(w, req)
	}))
	t.Cleanup(proxy.Close)
	return strings.TrimPrefix(proxy.URL, "http://"), func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(ops)
	}
}

func sha256Of(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// TestReceiverChecksums: getChecksums answers zeroes for a range with a
// hole and the SHA-256 of a range of data (zeroes included).
func TestReceiverChecksums(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Truncate(p, 1<<20)
	b := writeAt(t, p, 0, 8192, false)
	writeAt(t, p, 16384, 4096, true)
	r := receive(t, p)
	s := &sender{base: "http://" + hostPort("127.0.0.1", r.Port()) + ssyncPrefix, opts: SendOptions{Timeout: 5e9}, client: &httpClientForTest}
	ctx := context.Background()
	if _, err := s.open(ctx, 1<<20, false); err != nil || !s.packed {
		t.Fatalf("open: %v, packed %v", err, s.packed)
	}
	var raw []byte
	hdr := http.Header{DataRangesHeader: {"0+8192,8192+4096,16384+4096"}}
	if err := s.callWith(ctx, "POST", "getChecksums", Interval{0, 1 << 20}.values(), hdr, []byte{}, &raw); err != nil {
		t.Fatal(err)
	}
	s1, z := sha256Of(b), sha256Of(make([]byte, 4096))
	if len(raw) != 3*sumSize || !bytes.Equal(raw[:32], s1) || !bytes.Equal(raw[32:64], make([]byte, 32)) || !bytes.Equal(raw[64:], z) {
		t.Fatalf("answer %x", raw)
	}
	var m []byte
	if err := s.call(ctx, "GET", "extentMap", nil, nil, &m); err != nil || string(m) != "0+8192,16384+4096" {
		t.Fatalf("extent map %q %v", m, err)
	}
	// A body that is not the ranges' length is refused.
	hdr = http.Header{DataRangesHeader: {"0+4096"}}
	if err := s.callWith(ctx, "POST", "writePacked", Interval{0, 4096}.values(), hdr, []byte("short"), nil); err == nil ||
		!strings.Contains(err.Error(), "400") {
		t.Fatalf("short body: %v", err)
	}
	s.sendClose(RecordedMetadata{})
}

// FuzzParseLocalFile: any LocalFileHeader value parses into a boot id, an
// absolute path and numbers, or an error; never a panic.
func FuzzParseLocalFile(f *testing.F) {
	f.Add("e10ee5df-5b2e 64768 1234 /var/lib/longhorn/replicas/r/volume-snap-a.img")
	f.Add(" 1 2 rel")
	f.Fuzz(func(t *testing.T, v string) {
		lf, err := parseLocalFile(v)
		if err == nil && (lf.boot == "" || !filepath.IsAbs(lf.path)) {
			t.Fatalf("accepted %q as %+v", v, lf)
		}
	})
}

// TestOpenLocalRefuses: a local file is written only when it is the
// receiver's file on this kernel with the sent file's base name.
func TestOpenLocalRefuses(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "volume-snap-x.img")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(p)
	v := localFileValue(f, p)
	f.Close()
	if g := openLocal(v, "/src/volume-snap-x.img"); g == nil {
		t.Fatalf("%q not opened", v)
	} else {
		g.Close()
	}
	lf, _ := parseLocalFile(v)
	for name, bad := range map[string]string{
		"other base name": v,
		"other boot":      "x" + v,
		"other inode":     fmt.Sprintf("%s %d %d %s", lf.boot, lf.dev, lf.ino+1, lf.path),
		"a directory":     fmt.Sprintf("%s %d %d %s", lf.boot, lf.dev, lf.ino, dir),
	} {
		src := "/src/volume-snap-x.img"
		if name == "other base name" {
			src = "/src/volume-snap-y.img"
		}
		if g := openLocal(bad, src); g != nil {
			g.Close()
			t.Errorf("%s: opened", name)
		}
	}
	head := filepath.Join(dir, "volume-head-001.img")
	if err := os.WriteFile(head, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hf, _ := os.Open(head)
	hv := localFileValue(hf, head)
	hf.Close()
	if g := openLocal(hv, "/src/volume-head-001.img"); g != nil {
		g.Close()
		t.Error("a head file: opened")
	}
}
