package syncagent

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Golden ssync exchanges (longhorn-engine-wire.md §5), both ways: the
// requests our sender makes, as a Longhorn receiver sees them, and the
// answers our receiver gives to Longhorn's sender.

// recordingReceiver answers like a Longhorn receiver and records each
// request as "METHOD path?sorted-query accept".
type recordingReceiver struct {
	mu      sync.Mutex
	lines   []string
	existed bool
	remote  string // getRecordedMetadata answer ("" = 404)
}

func (rr *recordingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	rr.mu.Lock()
	rr.lines = append(rr.lines, fmt.Sprintf("%s %s?%s accept=%s", r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Accept")))
	rr.mu.Unlock()
	switch r.URL.Path {
	case "/v1-ssync/open":
		_ = json.NewEncoder(w).Encode(rr.existed)
	case "/v1-ssync/getChecksum":
		_, _ = w.Write([]byte("null"))
	case "/v1-ssync/getRecordedMetadata":
		if rr.remote == "" {
			http.Error(w, "no such file", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte(rr.remote))
	}
}

// exchange runs SendFile against a recording receiver and returns the
// requests, the data requests sorted (4 workers send them in any order).
func exchange(t *testing.T, path string, rr *recordingReceiver, opts SendOptions) []string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rr}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	if _, err := SendFile(context.Background(), path, ln.Addr().String(), opts); err != nil {
		t.Fatal(err)
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	lines := append([]string(nil), rr.lines...)
	first, last := 0, len(lines)-1
	if strings.Contains(lines[0], "getRecordedMetadata") || strings.Contains(lines[0], "/open?") {
		first = 1
		if len(lines) > 1 && strings.Contains(lines[1], "/open?") {
			first = 2
		}
	}
	sort.Strings(lines[first:last])
	return lines
}

func dataFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(12288); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 8192} {
		if _, err := f.WriteAt([]byte(strings.Repeat("x", 4096)), off); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func expectLines(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("exchange:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestGoldenSenderFresh: to a receiver that did not have the file only the
// data goes (the new file is all holes), and a snapshot disk file without a
// record is hashed first, so close carries its checksum for the receiver to
// record (the next fast rebuild then skips it whole).
func TestGoldenSenderFresh(t *testing.T) {
	p := dataFile(t, "volume-snap-a.img")
	got := exchange(t, p, &recordingReceiver{}, SendOptions{DirectIO: true})
	expectLines(t, got,
		"GET /v1-ssync/open?begin=0&directIO=true&end=12288 accept=application/json",
		"POST /v1-ssync/writeData?begin=0&end=4096 accept=application/json",
		"POST /v1-ssync/writeData?begin=8192&end=12288 accept=application/json",
		"POST /v1-ssync/close?checksum=4d4c4032e61bdba6&checksumMethod=crc64 accept=application/json")
	if rec, _, err := CurrentRecorded(p); err != nil || rec.Checksum != "4d4c4032e61bdba6" {
		t.Fatalf("source record %+v, %v", rec, err)
	}
	// Not a snapshot disk file: nothing is hashed.
	got = exchange(t, dataFile(t, "volume-head-001.img"), &recordingReceiver{}, SendOptions{DirectIO: true})
	if last := got[len(got)-1]; last != "POST /v1-ssync/close?checksum=&checksumMethod= accept=application/json" {
		t.Fatalf("head file close: %s", last)
	}
}

func TestGoldenSenderExisting(t *testing.T) {
	got := exchange(t, dataFile(t, "volume-snap-a.img.meta"), &recordingReceiver{existed: true}, SendOptions{})
	expectLines(t, got,
		"GET /v1-ssync/open?begin=0&directIO=false&end=12288 accept=application/json",
		"GET /v1-ssync/getChecksum?begin=0&end=4096 accept=application/json",
		"GET /v1-ssync/getChecksum?begin=8192&end=12288 accept=application/json",
		"POST /v1-ssync/sendHole?begin=4096&end=8192 accept=application/json",
		"POST /v1-ssync/writeData?begin=0&end=4096 accept=application/json",
		"POST /v1-ssync/writeData?begin=8192&end=12288 accept=application/json",
		"POST /v1-ssync/close?checksum=&checksumMethod= accept=application/json")
}

// TestGoldenSenderFastPath: a current recorded checksum equal to the
// receiver's skips the transfer; close still carries the checksum.
func TestGoldenSenderFastPath(t *testing.T) {
	p := dataFile(t, "volume-snap-a.img")
	ct, err := ChangeTime(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteRecorded(p, RecordedMetadata{Method: "crc64", Checksum: "0470c08fbc4dc702", ChangeTime: ct}); err != nil {
		t.Fatal(err)
	}
	rr := &recordingReceiver{remote: `{"method":"crc64","checksum":"0470c08fbc4dc702","change_time":"x"}`}
	expectLines(t, exchange(t, p, rr, SendOptions{FastSync: true, DirectIO: true}),
		"GET /v1-ssync/getRecordedMetadata? accept=application/json",
		"POST /v1-ssync/close?checksum=0470c08fbc4dc702&checksumMethod=crc64 accept=application/json")
	// Another checksum on the receiver: the full transfer follows.
	rr = &recordingReceiver{remote: `{"method":"crc64","checksum":"ffff","change_time":"x"}`}
	if got := exchange(t, p, rr, SendOptions{FastSync: true, DirectIO: true}); len(got) != 5 {
		t.Fatalf("different checksum: %v", got)
	}
}

// TestGoldenReceiver: our receiver's answers as Longhorn's sender reads them.
func TestGoldenReceiver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "volume-snap-a.img")
	r := receive(t, path)
	base := "http://127.0.0.1:" + fmt.Sprint(r.Port()) + "/v1-ssync/"
	data := strings.Repeat("y", 4096)
	sum := sha512.Sum512([]byte(data))
	steps := []struct{ method, op, body, want string }{
		{"GET", "open?begin=0&end=8192", "", "500 text/plain; charset=utf-8 ssync: directIO does not exist in the queries"},
		{"GET", "open?begin=0&directIO=true&end=8000", "", "500 text/plain; charset=utf-8 ssync: file size 8000 is not a multiple of 4096"},
		{"POST", "open?begin=0&directIO=true&end=8192", "", "405"},
		{"GET", "nothing", "", "404"},
		{"GET", "open?begin=0&directIO=true&end=8192", "", "200 application/json false\n"},
		{"GET", "getChecksum?begin=0&end=4096", "", "200 application/json null\n"},
		{"POST", "writeData?begin=0&end=4096", data, "200  "},
		{"GET", "getChecksum?begin=0&end=4096", "", "200 application/json \"" + base64.StdEncoding.EncodeToString(sum[:]) + "\"\n"},
		{"POST", "sendHole?begin=4096&end=8192", "", "200  "},
		{"GET", "getRecordedMetadata", "", "404 text/plain; charset=utf-8"},
		{"POST", "close?checksum=0470c08fbc4dc702&checksumMethod=crc64", "", "200  "},
	}
	for _, s := range steps {
		req, _ := http.NewRequest(s.method, base+s.op, strings.NewReader(s.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", s.method, s.op, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
		if !strings.HasPrefix(got, s.want) {
			t.Fatalf("%s %s: %q, want %q...", s.method, s.op, got, s.want)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("receiver: %v", err)
	}
	rec, _, err := CurrentRecorded(path)
	if err != nil || rec.Method != "crc64" || rec.Checksum != "0470c08fbc4dc702" || rec.LastHashedAt != "" || rec.SilentlyCorrupted {
		t.Fatalf("recorded after close: %+v %v", rec, err)
	}
	if b, _ := os.ReadFile(path + ChecksumSuffix); !strings.Contains(string(b), `"change_time":"`) {
		t.Fatalf(".checksum JSON: %s", b)
	}
	// A second receiver on the now existing file answers open true, and the
	// recorded checksum while the file is unchanged.
	r2 := receive(t, path)
	base = "http://127.0.0.1:" + fmt.Sprint(r2.Port()) + "/v1-ssync/"
	for _, s := range []struct{ op, want string }{
		{"getRecordedMetadata", `{"method":"crc64","checksum":"0470c08fbc4dc702"`},
		{"open?begin=0&directIO=false&end=8192", "true"},
	} {
		resp, err := http.Get(base + s.op)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(b), s.want) {
			t.Fatalf("%s: %q, want %q...", s.op, b, s.want)
		}
	}
}
