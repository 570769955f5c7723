package ui

import (
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/internal/svcenv"
)

// FrontendOptions configure NewFrontend.
type FrontendOptions struct {
	// Backend is the manager's REST API, e.g. http://longhorn-backend:9500
	// (Longhorn's LONGHORN_MANAGER_IP). Required: scheme http or https and a host.
	Backend string
	// Files are the UI's files; nil means the embedded build (Files()).
	Files fs.FS
	// Log receives one line per failed proxy request (default: logrus standard).
	Log logrus.FieldLogger
}

// ParseBackend checks a backend URL: http or https with a host, no path
// beyond "/". Errors name the flag and what is wrong.
func ParseBackend(s string) (*url.URL, error) {
	if s == "" {
		return nil, fmt.Errorf("--backend: required (the manager API, e.g. http://longhorn-backend:9500)")
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("--backend %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("--backend %q: scheme must be http or https", s)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("--backend %q: no host", s)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("--backend %q: must not have a path (/v1 is added)", s)
	}
	u.Path = ""
	return u, nil
}

// ServiceEnvHost maps a backend host that is a Kubernetes Service name
// (such as longhorn-backend) to the Service's cluster IP from the
// environment Kubernetes gives every pod (<NAME>_SERVICE_HOST, with dashes
// as underscores), for clusters without DNS (svcenv.Host). Other hosts are
// returned as they are.
func ServiceEnvHost(host string, getenv func(string) string) string {
	return svcenv.Host(host, getenv)
}

// NewFrontend serves the UI files and proxies /v1 and /v1/* (REST and the
// WebSocket streams) to the backend. The proxy keeps the client's Host and
// sets X-Forwarded-Host and X-Forwarded-Proto, so the links the API builds
// point at the frontend. When the backend's host is a Service name that
// does not resolve, its <NAME>_SERVICE_HOST address is used.
func NewFrontend(opts FrontendOptions) (http.Handler, error) {
	backend, err := ParseBackend(opts.Backend)
	if err != nil {
		return nil, err
	}
	if _, err := net.LookupHost(backend.Hostname()); err != nil {
		backend.Host = ServiceEnvHost(backend.Host, os.Getenv)
	}
	if opts.Files == nil {
		opts.Files = Files()
	}
	log := opts.Log
	if log == nil {
		log = logrus.StandardLogger()
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(backend)
			r.SetXForwarded()
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1, // stream WebSocket frames and long answers at once
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.WithError(err).WithField("path", r.URL.Path).Warn("UI proxy: backend request failed")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, `{"type":"error","status":502,"code":"BadGateway","message":%q}`, "the Longhorn manager API ("+backend.String()+") cannot be reached: "+err.Error())
		},
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		},
	}
	files := Handler(opts.Files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/") {
			proxy.ServeHTTP(w, r)
			return
		}
		files.ServeHTTP(w, r)
	}), nil
}
