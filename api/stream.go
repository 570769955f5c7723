package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
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
	// maxClientMessage bounds what a stream client may send (it is only
	// read to notice the close).
	maxClientMessage = 4096
	// maxCachedBases bounds the per-base-URL message cache of a hub.
	maxCachedBases = 8
)

// hub is one stream, /v1/ws/<name>: how to list its collection and which
// informers change it. It registers one event handler per informer (when
// the first client connects), wakes every subscriber on a change without
// blocking on any, and marshals each version of the list once per base URL
// however many clients there are.
type hub struct {
	list      handlerFunc
	informers func() []cache.SharedIndexInformer

	mu         sync.Mutex
	registered bool
	version    uint64
	subs       map[chan struct{}]struct{}
	cache      map[string]cachedMessage
}

type cachedMessage struct {
	version uint64
	msg     []byte
}

func newHub(list handlerFunc, informers func() []cache.SharedIndexInformer) *hub {
	return &hub{list: list, informers: informers, subs: map[chan struct{}]struct{}{}, cache: map[string]cachedMessage{}}
}

// newHubs lists every stream of Longhorn's router: one per collection, plus
// backups (every Backup object). Streams of features this product does not
// have yet send their empty collection once.
func (s *Server) newHubs() map[string]*hub {
	ds := s.ds
	infs := func(f ...func() cache.SharedIndexInformer) func() []cache.SharedIndexInformer {
		return func() []cache.SharedIndexInformer {
			var out []cache.SharedIndexInformer
			for _, fn := range f {
				if inf := fn(); inf != nil {
					out = append(out, inf)
				}
			}
			return out
		}
	}
	events := func() cache.SharedIndexInformer { return s.opts.Events }
	return map[string]*hub{
		"settings": newHub(s.listSettings, infs(ds.SettingInformer)),
		"volumes": newHub(s.listVolumes, infs(ds.VolumeInformer, ds.EngineInformer, ds.ReplicaInformer,
			ds.VolumeAttachmentInformer, ds.BackupInformer)),
		"nodes":               newHub(s.listNodes, infs(ds.NodeInformer, ds.InstanceManagerInformer)),
		"disktags":            newHub(s.listDiskTags, infs(ds.NodeInformer)),
		"nodetags":            newHub(s.listNodeTags, infs(ds.NodeInformer)),
		"engineimages":        newHub(s.listEngineImages, infs(ds.EngineImageInformer)),
		"instancemanagers":    newHub(s.listInstanceManagers, infs(ds.InstanceManagerInformer)),
		"volumeattachments":   newHub(s.listVolumeAttachments, infs(ds.VolumeAttachmentInformer)),
		"events":              newHub(s.listEvents, infs(events)),
		"recurringjobs":       newHub(s.listRecurringJobs, infs(ds.RecurringJobInformer)),
		"backuptargets":       newHub(s.listBackupTargets, infs(ds.BackupTargetInformer)),
		"orphans":             newHub(emptyCollection("orphan", "orphans"), infs()),
		"backupvolumes":       newHub(s.listBackupVolumes, infs(ds.BackupVolumeInformer)),
		"backups":             newHub(s.listBackups, infs(ds.BackupInformer)),
		"backingimages":       newHub(emptyCollection("backingImage", "backingimages"), infs()),
		"backupbackingimages": newHub(emptyCollection("backupBackingImage", "backupbackingimages"), infs()),
		"systembackups":       newHub(emptyCollection("systemBackup", "systembackups"), infs()),
		"systemrestores":      newHub(emptyCollection("systemRestore", "systemrestores"), infs()),
		"supportbundles":      newHub(emptyCollection("supportBundle", "supportbundles"), infs()),
		"sharemanagers":       newHub(emptyCollection("shareManager", "sharemanagers"), infs()),
	}
}

// subscribe returns a channel that receives (without blocking the hub) when
// the collection may have changed. The first subscriber registers the
// informer handlers.
func (h *hub) subscribe() (chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.registered {
		handler := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { h.changed() },
			UpdateFunc: func(any, any) { h.changed() }, DeleteFunc: func(any) { h.changed() }}
		for _, inf := range h.informers() {
			if _, err := inf.AddEventHandler(handler); err != nil {
				return nil, err
			}
		}
		h.registered = true
	}
	ch := make(chan struct{}, 1)
	h.subs[ch] = struct{}{}
	return ch, nil
}

func (h *hub) unsubscribe(ch chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, ch)
}

// changed bumps the version and wakes every subscriber; a subscriber that
// has not consumed the previous wake-up keeps just one.
func (h *hub) changed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.version++
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// message returns the collection as JSON for base URL u, marshalled once
// per version and base.
func (h *hub) message(ctx context.Context, r *http.Request, u urls) ([]byte, error) {
	h.mu.Lock()
	version := h.version
	if c, ok := h.cache[u.base]; ok && c.version == version {
		h.mu.Unlock()
		return c.msg, nil
	}
	h.mu.Unlock()
	_, body, err := h.list(ctx, r, u)
	if err != nil {
		return nil, err
	}
	msg, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if len(h.cache) >= maxCachedBases {
		clear(h.cache)
	}
	if c, ok := h.cache[u.base]; !ok || c.version < version {
		h.cache[u.base] = cachedMessage{version: version, msg: msg}
	}
	h.mu.Unlock()
	return msg, nil
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
	h, ok := s.streams[r.PathValue("resource")]
	if !ok {
		writeError(w, newError(http.StatusNotFound, CodeNotFound, "no stream for %q", r.PathValue("resource")))
		return
	}
	period, err := ParseStreamPeriod(r.PathValue("period"))
	if err != nil {
		writeError(w, newError(http.StatusBadRequest, CodeInvalidInput, "%v", err))
		return
	}
	u := urls{base: baseURL(r), path: r.URL.Path}
	// Clients (UI, CLI) connect without an Origin header: accept any.
	srv := websocket.Server{Handshake: func(*websocket.Config, *http.Request) error { return nil },
		Handler: func(conn *websocket.Conn) { s.runStream(conn, r, u, h, period) }}
	srv.ServeHTTP(w, r)
}

func (s *Server) runStream(conn *websocket.Conn, r *http.Request, u urls, h *hub, period time.Duration) {
	conn.MaxPayloadBytes = maxClientMessage
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() { // the client closing the socket ends the stream
		var discard []byte
		for websocket.Message.Receive(conn, &discard) == nil {
		}
		cancel()
	}()
	changed, err := h.subscribe()
	if err != nil {
		return
	}
	defer h.unsubscribe(changed)
	st := streamState{conn: conn, hub: h, r: r, u: u, writeTimeout: s.writeTimeout}
	st.loop(ctx, period, s.keepAlive, changed)
}

// streamState is one client's stream: the last message sent and when.
type streamState struct {
	conn         *websocket.Conn
	hub          *hub
	r            *http.Request
	u            urls
	writeTimeout time.Duration
	last         []byte
	lastSent     time.Time
}

// send writes the current collection unless it equals the last one sent.
// It reports false when the socket is done (write error or deadline).
func (st *streamState) send(ctx context.Context) bool {
	msg, err := st.hub.message(ctx, st.r, st.u)
	if err != nil {
		return ctx.Err() == nil // transient list error: try on the next change
	}
	if bytes.Equal(msg, st.last) {
		return true
	}
	st.last, st.lastSent = msg, time.Now()
	return st.write(websocket.TextFrame, msg) == nil
}

// loop sends on change (rate-limited by period) and pings on idle.
func (st *streamState) loop(ctx context.Context, period, keepAlivePeriod time.Duration, changed <-chan struct{}) {
	if !st.send(ctx) {
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
			if wait := period - time.Since(st.lastSent); period > 0 && wait > 0 {
				if delay == nil {
					delay = time.After(wait)
				}
				continue
			}
			if !st.send(ctx) {
				return
			}
		case <-delay:
			delay = nil
			if !st.send(ctx) {
				return
			}
		case <-keepAlive.C:
			if st.write(websocket.PingFrame, nil) != nil {
				return
			}
		}
	}
}

// write sends one frame within the write deadline; a client that does not
// read fails it, and its stream ends without holding up anyone else.
func (st *streamState) write(typ byte, msg []byte) error {
	if err := st.conn.SetWriteDeadline(time.Now().Add(st.writeTimeout)); err != nil {
		return err
	}
	st.conn.PayloadType = typ
	_, err := st.conn.Write(msg)
	return err
}
