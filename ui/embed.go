// Package ui holds the web UI's built files (ui/dist, made by `make ui`
// from the TypeScript sources in ui/src) and serves them.
//
// The files are committed, so `go build` needs no Node; `make verify-ui`
// rebuilds them and fails when the commit is stale. The UI speaks only to
// /v1 and /v1/ws, relative to its own URL, so whatever serves these files
// must serve the API next to them: Frontend does that by proxying /v1 to a
// manager (Longhorn's longhorn-ui Deployment behind Service
// longhorn-frontend does the same with nginx).
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed all:dist
var dist embed.FS

// Files returns the built UI: index.html and assets/*.
func Files() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	return sub
}

// Handler serves the built UI from files: "/" is index.html (never
// cached, it names the current assets); assets/* have content-hashed names
// and are cached for a year. Unknown paths answer 404 (the UI routes with
// the URL fragment, so no path needs index.html as a fallback).
func Handler(files fs.FS) http.Handler {
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := path.Clean("/" + r.URL.Path)
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		switch {
		case p == "/" || p == "/index.html":
			h.Set("Cache-Control", "no-cache")
			serveIndex(w, r, files)
			return
		case strings.HasPrefix(p, "/assets/"):
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		default:
			h.Set("Cache-Control", "no-cache")
		}
		fileServer.ServeHTTP(w, r)
	})
}

// serveIndex writes index.html itself: http.FileServer redirects
// /index.html to / and would list a directory.
func serveIndex(w http.ResponseWriter, r *http.Request, files fs.FS) {
	b, err := fs.ReadFile(files, "index.html")
	if err != nil {
		http.Error(w, "the UI was built without index.html", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}
