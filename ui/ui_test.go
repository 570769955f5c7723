package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"golang.org/x/net/websocket"
)

func TestEmbeddedBuild(t *testing.T) {
	b, err := io.ReadAll(must(Files().Open("index.html")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `<div id="root">`) || !strings.Contains(string(b), "./assets/") {
		t.Fatalf("index.html is not the built UI (relative assets, #root):\n%s", b)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var testFiles = fstest.MapFS{
	"index.html":       {Data: []byte("<html>ui</html>")},
	"assets/app-1.js":  {Data: []byte("console.log(1)")},
	"assets/app-1.css": {Data: []byte("body{}")},
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler(testFiles))
	defer srv.Close()
	cases := []struct {
		method, path string
		status       int
		cache, body  string
	}{
		{"GET", "/", 200, "no-cache", "<html>ui</html>"},
		{"GET", "/index.html", 200, "no-cache", "<html>ui</html>"},
		{"HEAD", "/", 200, "no-cache", ""},
		{"GET", "/assets/app-1.js", 200, "public, max-age=31536000, immutable", "console.log(1)"},
		{"GET", "/assets/missing.js", 404, "", ""}, // errors are never cached
		{"GET", "/nope", 404, "", ""},
		{"POST", "/", 405, "", ""},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status || res.Header.Get("Cache-Control") != c.cache || (c.body != "" && string(body) != c.body) {
			t.Errorf("%s %s: %d %q %q, want %d %q %q", c.method, c.path, res.StatusCode, res.Header.Get("Cache-Control"), body, c.status, c.cache, c.body)
		}
	}
}

func TestParseBackend(t *testing.T) {
	for _, bad := range []string{"", "longhorn-backend:9500", "ftp://x", "http://", "http://x/v1", "http://[::1"} {
		if _, err := ParseBackend(bad); err == nil || !strings.Contains(err.Error(), "--backend") {
			t.Errorf("ParseBackend(%q) = %v, want an error naming --backend", bad, err)
		}
	}
	u, err := ParseBackend("http://longhorn-backend:9500/")
	if err != nil || u.String() != "http://longhorn-backend:9500" {
		t.Errorf("ParseBackend: %v %v", u, err)
	}
}

func TestServiceEnvHost(t *testing.T) {
	env := map[string]string{"LONGHORN_BACKEND_SERVICE_HOST": "10.43.0.7"}
	get := func(k string) string { return env[k] }
	for in, want := range map[string]string{
		"longhorn-backend:9500":              "10.43.0.7:9500",
		"longhorn-backend":                   "10.43.0.7",
		"other:9500":                         "other:9500",
		"longhorn-backend.longhorn-system:1": "longhorn-backend.longhorn-system:1",
		"10.0.0.1:9500":                      "10.0.0.1:9500",
	} {
		if got := ServiceEnvHost(in, get); got != want {
			t.Errorf("ServiceEnvHost(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFrontendProxy checks that /v1 (REST and WebSocket) reaches the
// backend with the client's Host and X-Forwarded-*, and the rest is files.
func TestFrontendProxy(t *testing.T) {
	var gotHost, gotFwd string
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/volumes", func(w http.ResponseWriter, r *http.Request) {
		gotHost, gotFwd = r.Host, r.Header.Get("X-Forwarded-Host")
		_, _ = io.WriteString(w, `{"type":"collection","data":[]}`)
	})
	mux.Handle("/v1/ws/1s/volumes", websocket.Handler(func(c *websocket.Conn) {
		_ = websocket.Message.Send(c, `{"type":"collection","data":[{"id":"v"}]}`)
	}))
	backend := httptest.NewServer(mux)
	defer backend.Close()
	h, err := NewFrontend(FrontendOptions{Backend: backend.URL, Files: testFiles})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(h)
	defer front.Close()

	res, err := http.Get(front.URL + "/v1/volumes")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	host := strings.TrimPrefix(front.URL, "http://")
	if res.StatusCode != 200 || !strings.Contains(string(body), "collection") || gotHost != host || gotFwd != host {
		t.Errorf("proxied GET: %d %s host %q fwd %q, want host %q", res.StatusCode, body, gotHost, gotFwd, host)
	}
	ws, err := websocket.Dial("ws://"+host+"/v1/ws/1s/volumes", "", front.URL)
	if err != nil {
		t.Fatal(err)
	}
	var msg string
	if err := websocket.Message.Receive(ws, &msg); err != nil || !strings.Contains(msg, `"id":"v"`) {
		t.Errorf("proxied WebSocket: %q %v", msg, err)
	}
	ws.Close()
	res, err = http.Get(front.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "<html>ui</html>" {
		t.Errorf("GET / = %q", body)
	}
}

func TestFrontendBackendDown(t *testing.T) {
	backend := httptest.NewServer(http.NotFoundHandler())
	addr := backend.URL
	backend.Close()
	h, err := NewFrontend(FrontendOptions{Backend: addr, Files: testFiles})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/volumes", nil))
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), `"type":"error"`) || !strings.Contains(rec.Body.String(), "cannot be reached") {
		t.Errorf("backend down: %d %s", rec.Code, rec.Body.String())
	}
}
