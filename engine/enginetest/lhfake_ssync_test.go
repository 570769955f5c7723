package enginetest

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/longhorn-go/longhorn/engine/sparse"
)

// The ssync ends of the Longhorn-shaped fake replica (lhfake_*_test.go),
// written from longhorn-engine-wire.md §5 and independent of
// engine/syncagent, so that a rebuild between the fake and our replicas
// checks our ssync against Longhorn's protocol, not against itself.

// lhReceiver is sparse-tools' receiver for one file.
type lhReceiver struct {
	path    string
	existed bool
	srv     *http.Server
	ln      net.Listener
	f       *os.File
	done    chan error
}

func startLHReceiver(ln net.Listener, path string) *lhReceiver {
	_, err := os.Stat(path)
	r := &lhReceiver{path: path, existed: err == nil, ln: ln, done: make(chan error, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1-ssync/open", r.open)
	mux.HandleFunc("POST /v1-ssync/sendHole", r.hole)
	mux.HandleFunc("POST /v1-ssync/writeData", r.write)
	mux.HandleFunc("GET /v1-ssync/getChecksum", r.checksum)
	mux.HandleFunc("GET /v1-ssync/getRecordedMetadata", r.recorded)
	mux.HandleFunc("POST /v1-ssync/close", r.close)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r
}

func (r *lhReceiver) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

func fail(w http.ResponseWriter, err error) {
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

func interval(q url.Values) (int64, int64, error) {
	b, err1 := strconv.ParseInt(q.Get("begin"), 10, 64)
	e, err2 := strconv.ParseInt(q.Get("end"), 10, 64)
	if err1 != nil || err2 != nil || b < 0 || e < b {
		return 0, 0, fmt.Errorf("bad interval %v", q)
	}
	return b, e, nil
}

func (r *lhReceiver) open(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	_, end, err := interval(q)
	if err != nil {
		fail(w, err)
		return
	}
	if _, ok := q["directIO"]; !ok {
		fail(w, fmt.Errorf("directIO does not exist in the queries %v", q))
		return
	}
	direct, err := strconv.ParseBool(q.Get("directIO"))
	if err != nil || (direct && end%4096 != 0) {
		fail(w, fmt.Errorf("bad directIO open %v", q))
		return
	}
	if r.f, err = os.OpenFile(r.path, os.O_RDWR|os.O_CREATE, 0o644); err == nil {
		err = r.f.Truncate(end)
	}
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(r.existed)
}

func (r *lhReceiver) hole(w http.ResponseWriter, req *http.Request) {
	b, e, err := interval(req.URL.Query())
	if err == nil && r.f == nil {
		err = errors.New("not open")
	}
	if err == nil {
		err = sparse.PunchHole(r.f, b, e-b)
	}
	if err != nil {
		fail(w, err)
	}
}

func (r *lhReceiver) write(w http.ResponseWriter, req *http.Request) {
	b, e, err := interval(req.URL.Query())
	if err == nil && r.f == nil {
		err = errors.New("not open")
	}
	if err != nil {
		fail(w, err)
		return
	}
	buf := make([]byte, e-b)
	if _, err := io.ReadFull(req.Body, buf); err != nil {
		fail(w, err)
		return
	}
	if _, err := r.f.WriteAt(buf, b); err != nil {
		fail(w, err)
	}
}

// checksum: a SHA-512 only when one data extent covers the whole interval.
func (r *lhReceiver) checksum(w http.ResponseWriter, req *http.Request) {
	b, e, err := interval(req.URL.Query())
	if err == nil && r.f == nil {
		err = errors.New("not open")
	}
	if err != nil {
		fail(w, err)
		return
	}
	var sum []byte
	exts, err := sparse.FiemapExtents(r.f, b, e)
	if err == nil && len(exts) == 1 && exts[0].Offset <= b && exts[0].End() >= e {
		buf := make([]byte, e-b)
		if _, err := r.f.ReadAt(buf, b); err == nil {
			s := sha512.Sum512(buf)
			sum = s[:]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(sum)
}

func (r *lhReceiver) recorded(w http.ResponseWriter, _ *http.Request) {
	b, err := os.ReadFile(r.path + ".checksum")
	if errors.Is(err, os.ErrNotExist) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	var m struct {
		ChangeTime string `json:"change_time"`
	}
	ct, cerr := lhChangeTime(r.path)
	if err != nil || json.Unmarshal(b, &m) != nil || cerr != nil || m.ChangeTime != ct {
		fail(w, fmt.Errorf("disk file %s is changed", r.path))
		return
	}
	_, _ = w.Write(b)
}

func (r *lhReceiver) close(w http.ResponseWriter, req *http.Request) {
	var err error
	if r.f != nil {
		err = errors.Join(r.f.Sync(), r.f.Close())
		r.f = nil
	}
	q := req.URL.Query()
	if m, c := q.Get("checksumMethod"), q.Get("checksum"); err == nil && m != "" && c != "" {
		var ct string
		if ct, err = lhChangeTime(r.path); err == nil {
			b, _ := json.Marshal(map[string]any{"method": m, "checksum": c, "change_time": ct,
				"last_hashed_at": "", "silently_corrupted": false})
			err = os.WriteFile(r.path+".checksum", b, 0o644)
		}
	}
	if err != nil {
		fail(w, err)
	}
	r.done <- err
	go r.srv.Close()
}

// lhChangeTime is the ctime string sparse-tools records.
func lhChangeTime(path string) (string, error) {
	var st syscallStat
	if err := statCtime(path, &st); err != nil {
		return "", err
	}
	return time.Unix(st.sec, st.nsec).String(), nil
}

// lhSend is sparse-tools' sender: fast path, open (JSON bool back), holes
// and data (checksums first when the file existed), close with the
// recorded checksum.
func lhSend(path, hostport string, directIO, fastSync bool, timeout time.Duration) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if directIO && size%4096 != 0 {
		return fmt.Errorf("%s: size %d not a multiple of 4096", path, size)
	}
	c := &lhClient{base: "http://" + hostport + "/v1-ssync/", hc: &http.Client{Timeout: timeout}}
	var rec struct{ Method, Checksum, ChangeTime string }
	if strings.HasSuffix(path, ".img") {
		var raw struct {
			Method     string `json:"method"`
			Checksum   string `json:"checksum"`
			ChangeTime string `json:"change_time"`
		}
		if b, err := os.ReadFile(path + ".checksum"); err == nil && json.Unmarshal(b, &raw) == nil {
			rec.Method, rec.Checksum, rec.ChangeTime = raw.Method, raw.Checksum, raw.ChangeTime
		}
	}
	defer func() {
		_, _ = c.do("POST", "close", url.Values{"checksum": {rec.Checksum}, "checksumMethod": {rec.Method}}, nil)
	}()
	if fastSync && strings.HasSuffix(path, ".img") && rec.Checksum != "" {
		if ct, err := lhChangeTime(path); err == nil && ct == rec.ChangeTime {
			if b, err := c.do("GET", "getRecordedMetadata", nil, nil); err == nil {
				var remote struct {
					Checksum string `json:"checksum"`
				}
				if json.Unmarshal(b, &remote) == nil && remote.Checksum == rec.Checksum {
					return nil
				}
			}
		}
	}
	q := url.Values{"begin": {"0"}, "end": {strconv.FormatInt(size, 10)}, "directIO": {strconv.FormatBool(directIO)}}
	b, err := c.do("GET", "open", q, nil)
	if err != nil {
		return err
	}
	var existed bool
	if err := json.Unmarshal(b, &existed); err != nil {
		return fmt.Errorf("open answer %q: %w", b, err)
	}
	return lhSendContent(c, f, size, existed)
}

func lhSendContent(c *lhClient, f *os.File, size int64, existed bool) error {
	iv := func(b, e int64) url.Values {
		return url.Values{"begin": {strconv.FormatInt(b, 10)}, "end": {strconv.FormatInt(e, 10)}}
	}
	pos := int64(0)
	err := sparse.WalkData(f, 0, size, func(e sparse.Extent) error {
		if e.Offset > pos {
			if _, err := c.do("POST", "sendHole", iv(pos, e.Offset), nil); err != nil {
				return err
			}
		}
		for b := e.Offset; b < e.End(); b += 2 << 20 {
			end := min(b+2<<20, e.End())
			buf := make([]byte, end-b)
			if _, err := f.ReadAt(buf, b); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if existed {
				r, err := c.do("GET", "getChecksum", iv(b, end), nil)
				if err != nil {
					return err
				}
				var remote []byte
				local := sha512.Sum512(buf)
				if json.Unmarshal(r, &remote) == nil && bytes.Equal(remote, local[:]) {
					continue
				}
			}
			if _, err := c.do("POST", "writeData", iv(b, end), buf); err != nil {
				return err
			}
		}
		pos = e.End()
		return nil
	})
	if err == nil && pos < size {
		_, err = c.do("POST", "sendHole", iv(pos, size), nil)
	}
	return err
}

type lhClient struct {
	base string
	hc   *http.Client
}

func (c *lhClient) do(method, op string, q url.Values, body []byte) ([]byte, error) {
	u := c.base + op
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: HTTP %d: %s", method, op, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}
