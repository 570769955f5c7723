package api

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

func dialStream(t *testing.T, e *apiEnv, path string) *websocket.Conn {
	t.Helper()
	url := "ws" + strings.TrimPrefix(e.srv.URL, "http") + path
	conn, err := websocket.Dial(url, "", e.srv.URL)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// receiveSettings reads one message (bounded) as a settings collection.
func receiveSettings(t *testing.T, conn *websocket.Conn) map[string]string {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var msg string
	if err := websocket.Message.Receive(conn, &msg); err != nil {
		t.Fatalf("receive: %v", err)
	}
	var coll struct {
		Type, ResourceType string
		Data               []Setting
	}
	if err := json.Unmarshal([]byte(msg), &coll); err != nil || coll.Type != "collection" || coll.ResourceType != "setting" {
		t.Fatalf("message is not a settings collection: %v %.200s", err, msg)
	}
	out := map[string]string{}
	for _, s := range coll.Data {
		out[s.Name] = s.Value
	}
	return out
}

func TestSettingsStream(t *testing.T) {
	for _, path := range []string{"/v1/ws/settings", "/v1/ws/100ms/settings"} {
		t.Run(path, func(t *testing.T) {
			e := newFakeEnv(t, Options{})
			conn := dialStream(t, e, path)
			first := receiveSettings(t, conn)
			if first["auto-salvage"] != "true" {
				t.Fatalf("first message auto-salvage=%q", first["auto-salvage"])
			}
			if st := e.do("PUT", "/v1/settings/auto-salvage", SettingInput{Value: "false"}, nil); st != 200 {
				t.Fatalf("PUT = %d", st)
			}
			// Messages only come when the list changed, so the next one has the new value.
			if next := receiveSettings(t, conn); next["auto-salvage"] != "false" {
				t.Errorf("after PUT auto-salvage=%q", next["auto-salvage"])
			}
		})
	}
	e := newFakeEnv(t, Options{})
	var apiErr Error
	if st := e.do("GET", "/v1/ws/nothing", nil, &apiErr); st != 404 {
		t.Errorf("unknown stream = %d", st)
	}
	if st := e.do("GET", "/v1/ws/abc/settings", nil, &apiErr); st != 400 {
		t.Errorf("bad period = %d", st)
	}
}

func TestParseStreamPeriod(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "1s": time.Second, "-5s": 0, "1m": maxStreamPeriod, "250ms": 250 * time.Millisecond} {
		if got, err := ParseStreamPeriod(in); err != nil || got != want {
			t.Errorf("ParseStreamPeriod(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseStreamPeriod("soon"); err == nil {
		t.Error("ParseStreamPeriod(soon) succeeded")
	}
}

// setSetting writes a setting's value straight through the clientset.
func (e *apiEnv) setSetting(name, value string) {
	e.t.Helper()
	if st := e.do("PUT", "/v1/settings/"+name, SettingInput{Value: value}, nil); st != 200 {
		e.t.Fatalf("PUT %s=%s = %d", name, value, st)
	}
}

// TestStreamCoalescesByPeriod: with /v1/ws/1s/..., a burst of changes is
// sent as at most one message per period, the last one holding the final
// value; without a period each change may be sent.
func TestStreamCoalescesByPeriod(t *testing.T) {
	e := newFakeEnv(t, Options{})
	conn := dialStream(t, e, "/v1/ws/1s/settings")
	receiveSettings(t, conn)
	for i := 1; i <= 20; i++ {
		e.setSetting("replica-replenishment-wait-interval", strconv.Itoa(1000+i))
	}
	// Within 1.5 s at most two messages may come (the first change after
	// the initial message, if it fell outside the period, and one more).
	var msgs []map[string]string
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if err := conn.SetReadDeadline(deadline); err != nil {
			t.Fatal(err)
		}
		var msg string
		if err := websocket.Message.Receive(conn, &msg); err != nil {
			break
		}
		var coll struct{ Data []Setting }
		if err := json.Unmarshal([]byte(msg), &coll); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, s := range coll.Data {
			m[s.Name] = s.Value
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 || len(msgs) > 2 {
		t.Fatalf("%d messages for 20 changes in one period", len(msgs))
	}
	if last := msgs[len(msgs)-1]["replica-replenishment-wait-interval"]; last != "1020" {
		// The cache may lag the last write by a moment: the next message must have it.
		if next := receiveSettings(t, conn); next["replica-replenishment-wait-interval"] != "1020" {
			t.Errorf("final value %q / %q, want 1020", last, next["replica-replenishment-wait-interval"])
		}
	}
}

// TestSlowReaderClosedWithoutBlockingOthers: a client that stops reading
// fills its socket; its write deadline ends its stream while another client
// keeps getting every change promptly.
func TestSlowReaderClosedWithoutBlockingOthers(t *testing.T) {
	e := newFakeEnv(t, Options{})
	e.server.writeTimeout = 300 * time.Millisecond
	url := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/v1/ws/settings"
	cfg, err := websocket.NewConfig(url, e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// A tiny receive buffer: the slow client's socket fills after a few messages.
	cfg.Dialer = &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	slow, err := websocket.DialConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast := dialStream(t, e, "/v1/ws/settings")
	receiveSettings(t, fast)
	h := e.server.streams["settings"]
	eventually(t, "two subscribers", func() bool { return h.subscribers() == 2 })
	for i := 1; i <= 60; i++ {
		e.setSetting("replica-replenishment-wait-interval", strconv.Itoa(1000+i))
		if got := receiveSettings(t, fast); got["replica-replenishment-wait-interval"] == "" {
			t.Fatal("fast client got no value")
		}
		if h.subscribers() == 1 {
			break
		}
	}
	eventually(t, "slow client dropped", func() bool { return h.subscribers() == 1 })
	e.setSetting("replica-replenishment-wait-interval", "7")
	for i := 0; i < 5; i++ {
		if receiveSettings(t, fast)["replica-replenishment-wait-interval"] == "7" {
			return
		}
	}
	t.Error("fast client did not see the change after the slow one was dropped")
}

// TestStreamPings: an idle stream sends WebSocket pings (opcode 9) every
// keep-alive period; read with a hand-made handshake so the frames show.
func TestStreamPings(t *testing.T) {
	e := newFakeEnv(t, Options{})
	e.server.keepAlive = 100 * time.Millisecond
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /v1/ws/engineimages HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", strings.TrimPrefix(e.srv.URL, "http://"))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake %v %v", resp, err)
	}
	var opcodes []byte
	for len(opcodes) < 3 {
		op, payload := readFrame(t, br)
		if op == 1 && !strings.Contains(string(payload), `"resourceType":"engineImage"`) {
			t.Fatalf("text frame %s", payload)
		}
		opcodes = append(opcodes, op)
	}
	if opcodes[0] != 1 || opcodes[1] != 9 || opcodes[2] != 9 {
		t.Errorf("opcodes %v, want a text frame then pings", opcodes)
	}
}

// readFrame reads one unmasked server frame (RFC 6455 section 5.2).
func readFrame(t *testing.T, br *bufio.Reader) (byte, []byte) {
	t.Helper()
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		t.Fatal(err)
	}
	n := uint64(hdr[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		_, _ = io.ReadFull(br, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		_, _ = io.ReadFull(br, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(br, payload); err != nil {
		t.Fatal(err)
	}
	return hdr[0] & 0x0f, payload
}

// subscribers is the number of connected clients of a stream.
func (h *hub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
