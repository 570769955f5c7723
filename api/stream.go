package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/net/websocket"
	"k8s.io/client-go/tools/cache"
)

// WebSocket stream timing (Longhorn api/stream.go): a ping every 15 s, a
// write must finish in 10 s, and a {period} is clamped to [0, 15s].
const (
	keepAlivePeriod = 15 * time.Second
	writeDeadline   = 10 * time.Second
	maxStreamPeriod = 15 * time.Second
)

// stream is a resource served on /v1/ws/<name>: how to list it and which
// informers change it.
type stream struct {
	list      handlerFunc
	informers func() []cache.SharedIndexInformer
}

func (s *Server) streams() map[string]stream {
	ds := s.ds
	return map[string]stream{
		"settings": {s.listSettings, func() []cache.SharedIndexInformer { return []cache.SharedIndexInformer{ds.SettingInformer()} }},
		"volumes": {s.listVolumes, func() []cache.SharedIndexInformer {
			return []cache.SharedIndexInformer{ds.VolumeInformer(), ds.EngineInformer(), ds.ReplicaInformer(), ds.VolumeAttachmentInformer()}
		}},
		"nodes": {s.listNodes, func() []cache.SharedIndexInformer {
			return []cache.SharedIndexInformer{ds.NodeInformer(), ds.InstanceManagerInformer()}
		}},
		"engineimages":      {s.listEngineImages, func() []cache.SharedIndexInformer { return []cache.SharedIndexInformer{ds.EngineImageInformer()} }},
		"instancemanagers":  {s.listInstanceManagers, func() []cache.SharedIndexInformer { return []cache.SharedIndexInformer{ds.InstanceManagerInformer()} }},
		"volumeattachments": {s.listVolumeAttachments, func() []cache.SharedIndexInformer { return []cache.SharedIndexInformer{ds.VolumeAttachmentInformer()} }},
	}
}

// ParseStreamPeriod parses the {period} of /v1/ws/{period}/<resource> with
// time.ParseDuration and clamps it to [0, 15s]. Error: not a duration.
func ParseStreamPeriod(p string) (time.Duration, error) {
	if p == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(p)
	if err != nil {
		return 0, fmt.Errorf("stream period %q: %w", p, err)
	}
	return min(max(d, 0), maxStreamPeriod), nil
}

// serveStream upgrades to a WebSocket and sends the resource's collection
// (the body of GET /v1/<resource>) on connect and after every change of
// its objects, skipping a message equal to the last one sent, and at most
// once per period when one is given.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	st, ok := s.streams()[r.PathValue("resource")]
	if !ok {
		writeError(w, newError(http.StatusNotFound, CodeNotFound, "no stream for %q", r.PathValue("resource")))
		return
	}
	period, err := ParseStreamPeriod(r.PathValue("period"))
	if err != nil {
		writeError(w, newError(http.StatusBadRequest, CodeInvalidInput, "%v", err))
		return
	}
	u := urls{base: baseURL(r)}
	// Clients (UI, CLI) connect without an Origin header: accept any.
	srv := websocket.Server{Handshake: func(*websocket.Config, *http.Request) error { return nil },
		Handler: func(conn *websocket.Conn) { s.runStream(conn, r, u, st, period) }}
	srv.ServeHTTP(w, r)
}

func (s *Server) runStream(conn *websocket.Conn, r *http.Request, u urls, st stream, period time.Duration) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() { // the client closing the socket ends the stream
		var discard []byte
		for websocket.Message.Receive(conn, &discard) == nil {
		}
		cancel()
	}()
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { notify() },
		UpdateFunc: func(any, any) { notify() }, DeleteFunc: func(any) { notify() }}
	for _, inf := range st.informers() {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return
		}
		defer func() { _ = inf.RemoveEventHandler(reg) }()
	}
	s.streamLoop(ctx, conn, r, u, st, period, changed)
}

// streamLoop sends on change (rate-limited by period) and pings on idle.
func (s *Server) streamLoop(ctx context.Context, conn *websocket.Conn, r *http.Request, u urls, st stream, period time.Duration, changed <-chan struct{}) {
	var last []byte
	var lastSent time.Time
	send := func() bool {
		_, body, err := st.list(ctx, r, u)
		if err != nil {
			return ctx.Err() == nil // transient list error: try on the next change
		}
		msg, err := json.Marshal(body)
		if err != nil || bytes.Equal(msg, last) {
			return err == nil
		}
		last, lastSent = msg, time.Now()
		return writeFrame(conn, websocket.TextFrame, msg) == nil
	}
	if !send() {
		return
	}
	keepAlive := time.NewTicker(keepAlivePeriod)
	defer keepAlive.Stop()
	var delay <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			if wait := period - time.Since(lastSent); period > 0 && wait > 0 {
				if delay == nil {
					delay = time.After(wait)
				}
				continue
			}
			if !send() {
				return
			}
		case <-delay:
			delay = nil
			if !send() {
				return
			}
		case <-keepAlive.C:
			if writeFrame(conn, websocket.PingFrame, nil) != nil {
				return
			}
		}
	}
}

func writeFrame(conn *websocket.Conn, typ byte, msg []byte) error {
	if err := conn.SetWriteDeadline(time.Now().Add(writeDeadline)); err != nil {
		return err
	}
	conn.PayloadType = typ
	_, err := conn.Write(msg)
	return err
}
