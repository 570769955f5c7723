package syncagent

import (
	"bytes"
	"context"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

// writeSparse creates a file of size bytes with random data in a few extents.
func writeSparse(t *testing.T, path string, size int64, seed int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 20; i++ {
		off := rng.Int63n(size/4096) * 4096
		n := min(int64(1+rng.Intn(300))*4096, size-off)
		buf := make([]byte, n)
		rng.Read(buf)
		if _, err := f.WriteAt(buf, off); err != nil {
			t.Fatal(err)
		}
	}
}

func receive(t *testing.T, path string) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := NewReceiver(ln, path, 30*time.Second)
	t.Cleanup(r.Close)
	return r
}

func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	da, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(da, db) {
		t.Fatalf("%s and %s differ (sizes %d, %d)", a, b, len(da), len(db))
	}
}

func TestSendFileFreshAndFast(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.img"), filepath.Join(dir, "dst.img")
	const size = 16 << 20
	writeSparse(t, src, size, 1)
	// Fresh target.
	r := receive(t, dst)
	st, err := SendFile(context.Background(), src, hostPort("127.0.0.1", r.Port()), SendOptions{FastSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("receiver: %v", err)
	}
	sameFiles(t, src, dst)
	srcData, _ := sparse.AllocatedBytesPath(src)
	dstData, _ := sparse.AllocatedBytesPath(dst)
	if dstData > srcData+1<<20 {
		t.Fatalf("target allocated %d bytes, source %d: holes were filled", dstData, srcData)
	}
	if st.Skipped != 0 || st.Sent == 0 {
		t.Fatalf("fresh target stats %+v", st)
	}
	// Same again: every batch matches and is skipped.
	r2 := receive(t, dst)
	st2, err := SendFile(context.Background(), src, hostPort("127.0.0.1", r2.Port()), SendOptions{FastSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if st2.Sent != 0 || st2.Skipped != st.Sent {
		t.Fatalf("second pass stats %+v, want all %d bytes skipped", st2, st.Sent)
	}
	if r2.Processed() != st.Sent {
		t.Fatalf("receiver processed %d, want %d", r2.Processed(), st.Sent)
	}
	// A target with stale data elsewhere: holes are punched, data fixed.
	writeSparse(t, dst, size, 99)
	r3 := receive(t, dst)
	if _, err := SendFile(context.Background(), src, hostPort("127.0.0.1", r3.Port()), SendOptions{FastSync: true}); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, src, dst)
}

func TestSendFileShrinksAndEmpty(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "meta"), filepath.Join(dir, "meta.copy")
	if err := os.WriteFile(src, []byte(`{"Name":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, bytes.Repeat([]byte("old"), 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	r := receive(t, dst)
	if _, err := SendFile(context.Background(), src, hostPort("127.0.0.1", r.Port()), SendOptions{}); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, src, dst)
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r2 := receive(t, filepath.Join(dir, "empty.copy"))
	if _, err := SendFile(context.Background(), empty, hostPort("127.0.0.1", r2.Port()), SendOptions{}); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, empty, filepath.Join(dir, "empty.copy"))
}

func TestReceiverRejectsBadRequests(t *testing.T) {
	dir := t.TempDir()
	r := receive(t, filepath.Join(dir, "f"))
	base := "http://" + hostPort("127.0.0.1", r.Port()) + ssyncPrefix
	s := &sender{base: base, opts: SendOptions{Timeout: 5 * time.Second}, client: &httpClientForTest}
	ctx := context.Background()
	iv := func(b, e int64) url.Values { return Interval{b, e}.values() }
	if err := s.call(ctx, "POST", "writeData", iv(0, 4096), make([]byte, 4096), nil); err == nil {
		t.Fatal("writeData before open accepted")
	}
	if err := s.call(ctx, "GET", "open", iv(0, 8192), nil, nil); err == nil {
		t.Fatal("open without directIO accepted")
	}
	q := iv(0, 8000)
	q.Set("directIO", "true")
	if err := s.call(ctx, "GET", "open", q, nil, nil); err == nil {
		t.Fatal("directIO open of an unaligned size accepted")
	}
	q = iv(0, 8192)
	q.Set("directIO", "false")
	var existed bool
	if err := s.call(ctx, "GET", "open", q, nil, &existed); err != nil || existed {
		t.Fatalf("open: existed %v, %v", existed, err)
	}
	if err := s.call(ctx, "POST", "writeData", iv(4096, 12288), make([]byte, 8192), nil); err == nil {
		t.Fatal("writeData past the end accepted")
	}
	if err := s.call(ctx, "POST", "writeData", iv(0, 4096), make([]byte, 100), nil); err == nil {
		t.Fatal("short body accepted")
	}
	if err := s.call(ctx, "POST", "sendHole", iv(4096, 0), nil, nil); err == nil {
		t.Fatal("inverted interval accepted")
	}
}

func TestParseInterval(t *testing.T) {
	ok := []string{"begin=0&end=0", "begin=5&end=10"}
	bad := []string{"", "begin=1", "begin=a&end=2", "begin=-1&end=2", "begin=3&end=2", "begin=0&end=11"}
	for _, q := range ok {
		v, _ := url.ParseQuery(q)
		if _, err := ParseInterval(v, 10); err != nil {
			t.Errorf("%q: %v", q, err)
		}
	}
	for _, q := range bad {
		v, _ := url.ParseQuery(q)
		if _, err := ParseInterval(v, 10); err == nil {
			t.Errorf("%q accepted", q)
		}
	}
}

// FuzzParseInterval: the receiver's query parser never panics and never
// returns an interval outside [0, limit].
func FuzzParseInterval(f *testing.F) {
	f.Add("begin=0&end=4096", int64(8192))
	f.Add("begin=9223372036854775807&end=-1", int64(1))
	f.Add("end=1&begin=1&begin=2", int64(3))
	f.Fuzz(func(t *testing.T, q string, limit int64) {
		v, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		iv, err := ParseInterval(v, limit)
		if err == nil && (iv.Begin < 0 || iv.End < iv.Begin || iv.End > limit) {
			t.Fatalf("accepted %+v for limit %d", iv, limit)
		}
	})
}

var httpClientForTest = http.Client{}

// FuzzReceiver: any sequence of ssync requests (method, endpoint, query and
// body from the fuzzer) never panics the receiver, never writes past the
// size open set, and never touches another file.
func FuzzReceiver(f *testing.F) {
	f.Add([]byte("G open begin=0&directIO=false&end=8192\nP writeData begin=0&end=4\nabcd\nG getChecksum begin=0&end=4096\nP close checksum=x&checksumMethod=y"))
	f.Add([]byte("G open begin=0&directIO=true&end=4095\nP sendHole begin=9&end=1\nG getRecordedMetadata \nP open begin=0"))
	f.Fuzz(func(t *testing.T, script []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "volume-snap-a.img")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		r := NewReceiver(ln, path, time.Minute)
		defer r.Close()
		lines := bytes.Split(script, []byte("\n"))
		for i := 0; i+1 <= len(lines) && i < 40; i++ {
			parts := bytes.SplitN(lines[i], []byte(" "), 3)
			if len(parts) < 3 {
				continue
			}
			method := map[string]string{"G": "GET", "P": "POST"}[string(parts[0])]
			if method == "" {
				method = "PUT"
			}
			var body []byte
			if string(parts[1]) == "writeData" && i+1 < len(lines) {
				body = lines[i+1]
				i++
			}
			req := httptest.NewRequest(method, "/v1-ssync/x", bytes.NewReader(body))
			req.URL = &url.URL{Path: "/v1-ssync/" + string(parts[1]), RawQuery: string(parts[2])}
			r.srv.Handler.ServeHTTP(httptest.NewRecorder(), req)
		}
		if fi, err := os.Stat(path); err == nil && fi.Size() > maxFileSize {
			t.Fatalf("file grew to %d", fi.Size())
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if n := e.Name(); n != "volume-snap-a.img" && n != "volume-snap-a.img.checksum" {
				t.Fatalf("receiver wrote %s", n)
			}
		}
	})
}

// FuzzAnswers: the sender's parsers of receiver answers never panic and
// accept only a bool / null or a 64-byte checksum.
func FuzzAnswers(f *testing.F) {
	for _, s := range []string{"true", "false\n", "null", `"` + strings.Repeat("A", 88) + `"`, "1", `{"x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeOpenAnswer(b)
		if sum, err := DecodeChecksumAnswer(b); err == nil && sum != nil && len(sum) != 64 {
			t.Fatalf("checksum of %d bytes accepted", len(sum))
		}
	})
}

// TestSendFileCoalesced: a fragmented snapshot disk file to a new file on
// our receiver goes in few requests (nearby extents together, holes as
// zeroes the receiver leaves unwritten), arrives identical and as sparse,
// and close records the CRC computed from the bytes sent, as HashDisk
// would. A receiver whose file existed does not offer the extension.
// dataExtents returns path's data extents (SEEK_DATA/SEEK_HOLE), which
// the replica's location index reads.
func dataExtents(t *testing.T, path string) []sparse.Extent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	var out []sparse.Extent
	if err := sparse.WalkData(f, 0, fi.Size(), func(e sparse.Extent) error { out = append(out, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSendFileCoalesced(t *testing.T) {
	noLocal = true // coalescing and hash-while-sending are the HTTP path's
	defer func() { noLocal = false }()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "volume-snap-c.img"), filepath.Join(dir, "dst", "volume-snap-c.img")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	const ext, size = 16 << 10, 8 << 20
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	buf := make([]byte, ext)
	extents := 0
	for off := int64(0); off < size; off += 2 * ext {
		rng.Read(buf)
		if off%(64*ext) == 0 {
			clear(buf[4096:8192]) // a zero page inside an extent
		}
		if _, err := f.WriteAt(buf, off); err != nil {
			t.Fatal(err)
		}
		extents++
	}
	f.Close()
	var requests atomic.Int64
	r := receive(t, dst)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		requests.Add(1)
		r.srv.Handler.ServeHTTP(w, req)
	}))
	defer proxy.Close()
	st, err := SendFile(context.Background(), src, strings.TrimPrefix(proxy.URL, "http://"), SendOptions{DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, src, dst)
	if n := requests.Load(); n > int64(extents)/8 {
		t.Fatalf("%d requests for %d extents: not coalesced", n, extents)
	}
	if st.Sent != int64(extents)*ext {
		t.Fatalf("sent %d data bytes, want %d", st.Sent, int64(extents)*ext)
	}
	if a, b := dataExtents(t, src), dataExtents(t, dst); !slices.Equal(a, b) {
		t.Fatalf("receiver's extent map differs from the source's (zero data pages must stay allocated):\n%v\n%v", a, b)
	}
	want, err := crc64File(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{src, dst} {
		if rec, _, err := CurrentRecorded(p); err != nil || rec.Checksum != want {
			t.Fatalf("%s record %+v (%v), want checksum %s", p, rec, err, want)
		}
	}
	// The file now exists: no extension, the sender compares and skips.
	r2 := receive(t, dst)
	st2, err := SendFile(context.Background(), src, hostPort("127.0.0.1", r2.Port()), SendOptions{DirectIO: true})
	if err != nil || st2.Sent != 0 || st2.Skipped != st.Sent {
		t.Fatalf("second pass %+v, %v", st2, err)
	}
}

// TestReceiverDataRangesOnlyForNewFiles: DataRangesHeader is obeyed only
// in a file without data at open (new, or all holes): the ranges are
// written, zero data included, the bytes between them stay holes;
// otherwise the whole body is written over the old bytes.
func TestReceiverDataRangesOnlyForNewFiles(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, bytes.Repeat([]byte{7}, 3*4096), 0o644); err != nil {
		t.Fatal(err)
	}
	holes := filepath.Join(dir, "holes") // exists, no data: as good as new
	if err := os.WriteFile(holes, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(holes, 1<<20); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{old, filepath.Join(dir, "new"), holes} {
		r := receive(t, p)
		s := &sender{base: "http://" + hostPort("127.0.0.1", r.Port()) + ssyncPrefix, opts: SendOptions{Timeout: 5 * time.Second},
			client: &httpClientForTest}
		ctx := context.Background()
		if _, err := s.open(ctx, 3*4096, false); err != nil {
			t.Fatal(err)
		}
		if s.dataRanges != (p != old) {
			t.Fatalf("%s: extension offered %v", p, s.dataRanges)
		}
		// page 0: a hole of the source; page 1: data of zeroes; page 2: data
		body := append(make([]byte, 2*4096), bytes.Repeat([]byte{1}, 4096)...)
		hdr := http.Header{DataRangesHeader: {"4096+8192"}}
		if err := s.callWith(ctx, "POST", "writeData", Interval{0, 3 * 4096}.values(), hdr, body, nil); err != nil {
			t.Fatal(err)
		}
		s.sendClose(RecordedMetadata{})
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if !bytes.Equal(got, body) {
			t.Fatalf("%s: content differs", p)
		}
		a, _ := sparse.AllocatedBytesPath(p)
		if p != old && a != 2*4096 {
			t.Fatalf("%s: %d bytes allocated, want the 8192 of the two data pages (zeroes too)", p, a)
		}
	}
}

func TestParseDataRanges(t *testing.T) {
	got, err := parseDataRanges("0+4096,8192+4096", 16384)
	if err != nil || len(got) != 2 || got[1] != (sparse.Extent{Offset: 8192, Length: 4096}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "x", "0+", "+1", "0+0", "-1+2", "4096+4096,0+4096", "0+8192,4096+4096", "12288+8192", "0+-5",
		strings.Repeat("0+1,", maxDataRanges) + "0+1"} {
		if _, err := parseDataRanges(bad, 16384); err == nil {
			t.Errorf("%.40q: want an error", bad)
		}
	}
}

// FuzzParseDataRanges: any header value parses into sorted, disjoint,
// non-empty ranges inside the body, or an error; never a panic.
func FuzzParseDataRanges(f *testing.F) {
	f.Add("0+4096,8192+4096", int64(16384))
	f.Add("9223372036854775807+1", int64(10))
	f.Fuzz(func(t *testing.T, v string, n int64) {
		rs, err := parseDataRanges(v, n)
		if err != nil {
			return
		}
		end := int64(0)
		for _, e := range rs {
			if e.Length <= 0 || e.Offset < end || e.Offset > n || e.Length > n-e.Offset {
				t.Fatalf("%q (n %d): bad range %+v", v, n, e)
			}
			end = e.End()
		}
	})
}
