package api

import (
	"context"
	"net/http"
	"path"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

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
	// Kube is the Kubernetes clientset for the pvCreate and pvcCreate
	// actions; nil answers them with 503.
	Kube kubernetes.Interface
	// Events is a started informer of the namespace's Kubernetes Events
	// (NewEventInformer); it feeds /v1/events and /v1/ws/events. Nil serves
	// an empty event list.
	Events cache.SharedIndexInformer
	// EngineImage is the default engine image (the manager's
	// --engine-image); engine images with this image are "default".
	EngineImage string
	// Log receives one line per failed request (default: logrus standard).
	Log logrus.FieldLogger
	// Ready reports whether the manager is ready (caches synced, webhook
	// serving, controllers running). Until it is, /v1/readyz answers 503
	// and every other route except /v1/healthz answers a 503 gdapi error,
	// so the router can be served before the datastore has synced. Nil
	// means always ready.
	Ready func() bool
	// NodeName is the node of this manager: trimFilesystem of a volume
	// attached there runs here, else it is forwarded.
	NodeName string
	// Trim trims a volume's filesystem on this node (trimFilesystem); nil
	// answers 503.
	Trim FilesystemTrimmer
	// ManagerAddress gives the REST address (HOST:PORT) of the manager on a
	// node, for the actions Longhorn forwards there (ManagerPodAddress);
	// nil answers them with 503 when the volume is on another node.
	ManagerAddress func(ctx context.Context, node string) (string, error)
}

// Server serves the REST API from a started, synced DataStore.
type Server struct {
	ds      *datastore.DataStore
	opts    Options
	mux     *http.ServeMux
	streams map[string]*hub
	handler http.Handler
	// keepAlive and writeTimeout are the stream ping period and write
	// deadline (keepAlivePeriod, writeDeadline; tests shorten them).
	keepAlive, writeTimeout time.Duration
}

// NewRouter returns the /v1 API handler over ds (which must be started and
// synced by the caller, as the manager does before serving). The routes are
// Longhorn's (api/router.go); routes.go lists them. Every answer is JSON:
// resources, collections, or a gdapi error object (unknown paths 404,
// known paths with another method 405).
func NewRouter(ds *datastore.DataStore, opts Options) http.Handler {
	return newServer(ds, opts).handler
}

func newServer(ds *datastore.DataStore, opts Options) *Server {
	if opts.Log == nil {
		opts.Log = logrus.StandardLogger()
	}
	s := &Server{ds: ds, opts: opts, mux: http.NewServeMux(), keepAlive: keepAlivePeriod, writeTimeout: writeDeadline}
	s.streams = s.newHubs()
	s.routes()
	s.handler = s.gate(http.HandlerFunc(s.dispatch))
	return s
}

// ready reports Options.Ready (true when unset).
func (s *Server) ready() bool { return s.opts.Ready == nil || s.opts.Ready() }

// gate serves /v1/healthz and /v1/readyz itself and holds every other
// request with a 503 until the manager is ready. It sets the X-API-Schemas
// header (gdapi clients bootstrap from it) on every answer.
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
			w.Header().Set("X-API-Schemas", urls{base: baseURL(r)}.collection("schemas"))
			next.ServeHTTP(w, r)
		}
	})
}

// dispatch routes a request through the mux. The path is cleaned first
// (a trailing slash, "//" and "." segments are ignored: Longhorn's router
// is strict-slash; the mux would redirect with an HTML body). A path no
// route has answers a gdapi 404; a path whose routes take other methods a
// gdapi 405 with Allow.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; p != "" {
		if clean := path.Clean("/" + p); clean != p {
			r2 := r.Clone(r.Context())
			r2.URL.Path, r2.URL.RawPath = clean, ""
			r = r2
		}
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.noRoute(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// noRoute answers a request no route takes: 405 when the mux knows the path
// with other methods (it sets Allow), else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	h, _ := s.mux.Handler(r)
	probe := &statusProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		writeError(w, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, probe.header.Get("Allow")))
		return
	}
	writeError(w, newError(http.StatusNotFound, CodeNotFound, "%s %s: no such resource or collection", r.Method, r.URL.Path))
}

// statusProbe records the status and headers the mux's own not-found or
// method-not-allowed handler would send, and drops the plain-text body.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header { return p.header }

func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }

func (p *statusProbe) WriteHeader(status int) { p.status = status }

// handlerFunc is an API handler: it returns the status and body to send,
// or an error mapped by toAPIError.
type handlerFunc func(ctx context.Context, r *http.Request, u urls) (int, any, error)

// handle adapts a handlerFunc: bounded context, JSON response, gdapi errors.
func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		status, body, err := h(ctx, r, urls{base: baseURL(r), path: r.URL.Path})
		if err != nil {
			e := toAPIError(err)
			if e.Status >= 500 && e.Status != http.StatusNotImplemented {
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
