package api

import (
	"encoding/json"
	"strings"
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
