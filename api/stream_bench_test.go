package api

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// idleSockets is how many idle clients BenchmarkIdleStreams holds open.
const idleSockets = 500

// memInUse is heap plus goroutine stacks in use after a GC, in bytes.
func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// rawClient is a client socket with no goroutine of its own, so the
// measurement sees the server's cost (and the same small client cost in
// both rows).
type rawClient struct {
	conn net.Conn
	br   *bufio.Reader
}

// openIdle opens n raw clients that each send request and read the answer
// (for a WebSocket: the 101 and the first frame), then stay idle.
func openIdle(b *testing.B, host, request string, ws bool, n int) []rawClient {
	b.Helper()
	out := make([]rawClient, 0, n)
	for range n {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			b.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := fmt.Fprintf(conn, request, host); err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReaderSize(conn, 512)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		if ws {
			if resp.StatusCode != http.StatusSwitchingProtocols {
				b.Fatalf("handshake %d", resp.StatusCode)
			}
			readBenchFrame(b, br)
		} else {
			_, _ = br.Discard(int(resp.ContentLength))
		}
		_ = conn.SetDeadline(time.Time{})
		out = append(out, rawClient{conn: conn, br: br})
	}
	return out
}

func readBenchFrame(b *testing.B, br *bufio.Reader) {
	b.Helper()
	hdr := make([]byte, 2)
	if _, err := br.Read(hdr[:1]); err != nil {
		b.Fatal(err)
	}
	if _, err := br.Read(hdr[1:]); err != nil {
		b.Fatal(err)
	}
	n := int(hdr[1] & 0x7f)
	switch n {
	case 126:
		x := make([]byte, 2)
		_, _ = br.Read(x[:1])
		_, _ = br.Read(x[1:])
		n = int(x[0])<<8 | int(x[1])
	case 127:
		b.Fatal("frame too large for the benchmark")
	}
	if _, err := br.Discard(n); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkIdleStreams measures what idle /v1/ws/1s/volumes clients cost
// the server: bytes (heap + stacks) and goroutines per socket, against a
// baseline of as many idle keep-alive HTTP connections in the same run.
// make bench-api runs it; -benchtime=1x.
func BenchmarkIdleStreams(b *testing.B) {
	var objs []k8sruntime.Object
	for i := range 10 {
		objs = append(objs, testVolume(fmt.Sprintf("vol-%d", i), longhorn.VolumeStateDetached, longhorn.VolumeRobustnessUnknown))
	}
	e := newFakeEnv(b, Options{}, objs...)
	host := strings.TrimPrefix(e.srv.URL, "http://")
	httpReq := "GET /v1/healthz HTTP/1.1\r\nHost: %s\r\n\r\n"
	wsReq := "GET /v1/ws/1s/volumes HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	for range b.N {
		base, baseG := measureIdle(b, host, httpReq, false)
		ws, wsG := measureIdle(b, host, wsReq, true)
		b.ReportMetric(float64(base)/idleSockets, "http-bytes/socket")
		b.ReportMetric(float64(ws)/idleSockets, "ws-bytes/socket")
		b.ReportMetric(float64(baseG)/idleSockets, "http-goroutines/socket")
		b.ReportMetric(float64(wsG)/idleSockets, "ws-goroutines/socket")
		b.ReportMetric(float64(ws)/float64(max(base, 1)), "ws/http")
		b.ReportMetric(float64(ws)/(1<<20), "ws-MiB-total")
	}
}

// measureIdle opens idleSockets clients and returns the memory and
// goroutines they added, then closes them.
func measureIdle(b *testing.B, host, request string, ws bool) (uint64, int) {
	before, g0 := memInUse(), runtime.NumGoroutine()
	clients := openIdle(b, host, request, ws, idleSockets)
	time.Sleep(200 * time.Millisecond) // let the server settle into its idle state
	after, g1 := memInUse(), runtime.NumGoroutine()
	for _, c := range clients {
		c.conn.Close()
	}
	time.Sleep(200 * time.Millisecond)
	if after < before {
		return 0, g1 - g0
	}
	return after - before, g1 - g0
}
