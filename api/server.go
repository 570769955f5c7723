package api

import (
	"context"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/datastore"
)

// DefaultPort is the REST API port (Longhorn's types.DefaultAPIPort).
const DefaultPort = 9500

// requestTimeout bounds the API server writes one request makes.
const requestTimeout = 30 * time.Second

// Options configure NewRouter.
type Options struct {
	// Snapshots runs the snapshot actions of attached volumes; nil answers
	// them with 503 and a message saying no engine client is configured.
	// EngineSnapshots is the implementation the manager uses.
	Snapshots SnapshotOps
	// Log receives one line per failed request (default: logrus standard).
	Log logrus.FieldLogger
	// Ready reports whether the manager is ready (caches synced, webhook
	// serving, controllers running). Until it is, /v1/readyz answers 503
	// and every other route except /v1/healthz answers a 503 gdapi error,
	// so the router can be served before the datastore has synced. Nil
	// means always ready.
	Ready func() bool
}

// Server serves the REST API from a started, synced DataStore.
type Server struct {
	ds   *datastore.DataStore
	opts Options
}

// NewRouter returns the /v1 API handler over ds (which must be started and
// synced by the caller, as the manager does before serving). Routes:
//
//	GET  /v1, /v1/schemas, /v1/schemas/{id}
//	GET  /v1/settings, /v1/settings/{name}; PUT /v1/settings/{name} {value}
//	GET  /v1/volumes, /v1/volumes/{name}; POST /v1/volumes; DELETE /v1/volumes/{name}
//	POST /v1/volumes/{name}?action=attach|detach|salvage|expand|updateReplicaCount|snapshot...
//	GET  /v1/nodes, /v1/nodes/{name}; PUT /v1/nodes/{name}; POST /v1/nodes/{name}?action=diskUpdate
//	GET  /v1/engineimages[/{name}], /v1/instancemanagers[/{name}], /v1/volumeattachments[/{name}]
//	GET  /v1/ws/{resource}, /v1/ws/{period}/{resource} (WebSocket streams)
//	GET  /v1/healthz (liveness), /v1/readyz (readiness, see Options.Ready)
func NewRouter(ds *datastore.DataStore, opts Options) http.Handler {
	if opts.Log == nil {
		opts.Log = logrus.StandardLogger()
	}
	s := &Server{ds: ds, opts: opts}
	mux := http.NewServeMux()
	s.routes(mux)
	return s.gate(mux)
}

// ready reports Options.Ready (true when unset).
func (s *Server) ready() bool { return s.opts.Ready == nil || s.opts.Ready() }

// gate serves /v1/healthz and /v1/readyz itself and holds every other
// request with a 503 until the manager is ready.
func (s *Server) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/healthz":
			_, _ = w.Write([]byte("ok"))
		case r.URL.Path == "/v1/readyz":
			if !s.ready() {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok"))
		case !s.ready():
			writeError(w, newError(http.StatusServiceUnavailable, CodeServerError, "the manager is starting; try again shortly"))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// handlerFunc is an API handler: it returns the status and body to send,
// or an error mapped by toAPIError.
type handlerFunc func(ctx context.Context, r *http.Request, u urls) (int, any, error)

// handle adapts a handlerFunc: bounded context, JSON response, gdapi errors.
func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		status, body, err := h(ctx, r, urls{base: baseURL(r)})
		if err != nil {
			e := toAPIError(err)
			if e.Status >= 500 {
				s.opts.Log.WithError(err).WithField("path", r.URL.Path).Warn("API request failed")
			}
			writeJSON(w, e.Status, e)
			return
		}
		if status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, body)
	}
}

func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1", s.handle(s.root))
	mux.HandleFunc("GET /v1/{$}", s.handle(s.root))
	mux.HandleFunc("GET /v1/schemas", s.handle(s.listSchemas))
	mux.HandleFunc("GET /v1/schemas/{id}", s.handle(s.getSchema))

	mux.HandleFunc("GET /v1/settings", s.handle(s.listSettings))
	mux.HandleFunc("GET /v1/settings/{name}", s.handle(s.getSetting))
	mux.HandleFunc("PUT /v1/settings/{name}", s.handle(s.updateSetting))

	mux.HandleFunc("GET /v1/volumes", s.handle(s.listVolumes))
	mux.HandleFunc("POST /v1/volumes", s.handle(s.createVolume))
	mux.HandleFunc("GET /v1/volumes/{name}", s.handle(s.getVolume))
	mux.HandleFunc("DELETE /v1/volumes/{name}", s.handle(s.deleteVolume))
	mux.HandleFunc("POST /v1/volumes/{name}", s.handle(s.volumeAction))

	mux.HandleFunc("GET /v1/nodes", s.handle(s.listNodes))
	mux.HandleFunc("GET /v1/nodes/{name}", s.handle(s.getNode))
	mux.HandleFunc("PUT /v1/nodes/{name}", s.handle(s.updateNode))
	mux.HandleFunc("POST /v1/nodes/{name}", s.handle(s.nodeAction))

	mux.HandleFunc("GET /v1/engineimages", s.handle(s.listEngineImages))
	mux.HandleFunc("GET /v1/engineimages/{name}", s.handle(s.getEngineImage))
	mux.HandleFunc("GET /v1/instancemanagers", s.handle(s.listInstanceManagers))
	mux.HandleFunc("GET /v1/instancemanagers/{name}", s.handle(s.getInstanceManager))
	mux.HandleFunc("GET /v1/volumeattachments", s.handle(s.listVolumeAttachments))
	mux.HandleFunc("GET /v1/volumeattachments/{name}", s.handle(s.getVolumeAttachment))

	mux.HandleFunc("GET /v1/ws/{resource}", s.serveStream)
	mux.HandleFunc("GET /v1/ws/{period}/{resource}", s.serveStream)
}

// root answers GET /v1 with the links to every collection (gdapi API root).
func (s *Server) root(_ context.Context, _ *http.Request, u urls) (int, any, error) {
	links := map[string]string{"self": u.base + "/v1", "schemas": u.collection("schemas")}
	for _, sc := range schemas() {
		if sc.coll != "" {
			links[sc.coll] = u.collection(sc.coll)
		}
	}
	return http.StatusOK, map[string]any{"id": "v1", "type": "apiVersion", "links": links, "actions": map[string]string{}}, nil
}
