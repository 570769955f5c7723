package engineapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
)

// IMAddress locates one instance manager: its process/instance API and its
// engine proxy.
type IMAddress struct {
	// Address is "HOST:PORT" of ProcessManagerService and InstanceService (8500).
	Address string
	// ProxyAddress is "HOST:PORT" of ProxyEngineService (8501).
	ProxyAddress string
}

// IMAddressForIP is the address of an instance manager pod with the default ports.
func IMAddressForIP(ip string) IMAddress {
	return IMAddress{
		Address:      net.JoinHostPort(ip, strconv.Itoa(DefaultInstanceManagerPort)),
		ProxyAddress: net.JoinHostPort(ip, strconv.Itoa(DefaultProxyPort)),
	}
}

// HandlerOptions tune a Handler; zero values take the defaults.
type HandlerOptions struct {
	// CheckInterval: a connection unused by a successful check for this long
	// is checked again (VersionGet + proxy Ping) before it is handed out;
	// default 10 s. A connection in TRANSIENT_FAILURE is always checked.
	CheckInterval time.Duration
	// CheckTimeout bounds one check; default 3 s.
	CheckTimeout time.Duration
	// TLS, when set, is used to dial instance managers (mutual TLS, see
	// ClientTLS); nil dials them in plaintext. Engines reached directly
	// are always plaintext.
	TLS *tls.Config
}

// Handler keeps one connection pair per instance manager, shared by all
// controllers. Safe for concurrent use.
type Handler struct {
	opts HandlerOptions

	mu     sync.Mutex
	ims    map[IMAddress]*imEntry
	closed bool
	dials  atomic.Int64
}

// imEntry is the connection state of one instance manager; mu serializes
// dialing and checking it, so concurrent callers share one dial.
type imEntry struct {
	addr IMAddress

	mu        sync.Mutex
	cc, pcc   *grpc.ClientConn
	versions  APIVersions
	lastCheck time.Time
	dials     *atomic.Int64
	tls       *tls.Config
	// engines are direct connections to engines (by address), used when
	// the instance manager has no proxy (engines_direct.go).
	engines map[string]*grpc.ClientConn
}

// NewHandler returns an empty Handler; connections are made on first use.
func NewHandler(opts HandlerOptions) *Handler {
	if opts.CheckInterval == 0 {
		opts.CheckInterval = 10 * time.Second
	}
	if opts.CheckTimeout == 0 {
		opts.CheckTimeout = 3 * time.Second
	}
	return &Handler{opts: opts, ims: map[IMAddress]*imEntry{}}
}

// ErrHandlerClosed is returned by a closed Handler.
var ErrHandlerClosed = errors.New("engineapi handler closed")

// InstanceManager returns a client of the instance manager at im. The
// connection is (re)dialed and its API version negotiated when needed.
// Errors: ErrIncompatible, ErrHandlerClosed, or the gRPC error of the check.
func (h *Handler) InstanceManager(ctx context.Context, im IMAddress) (*InstanceManagerClient, error) {
	e, err := h.entry(ctx, im)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return &InstanceManagerClient{addr: im.Address, versions: e.versions, entry: e,
		pm: imrpc.NewProcessManagerServiceClient(e.cc), inst: imrpc.NewInstanceServiceClient(e.cc)}, nil
}

// Engine returns an EngineClient reaching engine e through the proxy of the
// instance manager at im.
func (h *Handler) Engine(ctx context.Context, im IMAddress, e EngineRef) (EngineClient, error) {
	if e.Address == "" {
		return nil, fmt.Errorf("engine %q: address is required", e.Name)
	}
	ent, err := h.entry(ctx, im)
	if err != nil {
		return nil, err
	}
	ent.mu.Lock()
	defer ent.mu.Unlock()
	if !ProxySupported(ent.versions) {
		return ent.directLocked(e)
	}
	return &proxyEngineClient{
		target: fmt.Sprintf("engine %s (%s) via %s", e.Name, e.Address, im.ProxyAddress),
		c:      imrpc.NewProxyEngineServiceClient(ent.pcc), ext: imrpc.NewProxyEngineExtServiceClient(ent.pcc), entry: ent,
		req: &imrpc.ProxyEngineRequest{Address: e.Address, EngineName: e.Name, VolumeName: e.VolumeName},
	}, nil
}

// Forget closes the connections to im (e.g. its pod was deleted).
func (h *Handler) Forget(im IMAddress) {
	h.mu.Lock()
	e := h.ims[im]
	delete(h.ims, im)
	h.mu.Unlock()
	if e != nil {
		e.mu.Lock()
		e.closeLocked()
		e.mu.Unlock()
	}
}

// Close closes every connection; the Handler cannot be used afterwards.
func (h *Handler) Close() {
	h.mu.Lock()
	ims := h.ims
	h.ims, h.closed = map[IMAddress]*imEntry{}, true
	h.mu.Unlock()
	for _, e := range ims {
		e.mu.Lock()
		e.closeLocked()
		e.mu.Unlock()
	}
}

// SetTLS replaces the TLS configuration instance managers are dialed with
// (nil: plaintext) and closes every connection, so each is re-dialed with
// it on next use: the manager's side of a rotated longhorn-grpc-tls Secret.
// Calls in flight on the old connections fail and are retried by their
// reconciles.
func (h *Handler) SetTLS(cfg *tls.Config) {
	h.mu.Lock()
	h.opts.TLS = cfg
	ims := make([]*imEntry, 0, len(h.ims))
	for _, e := range h.ims {
		ims = append(ims, e)
	}
	h.mu.Unlock()
	for _, e := range ims {
		e.mu.Lock()
		e.tls = cfg
		e.closeLocked()
		e.mu.Unlock()
	}
}

// entry returns the checked connection pair of im.
func (h *Handler) entry(ctx context.Context, im IMAddress) (*imEntry, error) {
	if im.Address == "" || im.ProxyAddress == "" {
		return nil, fmt.Errorf("instance manager address %+v: Address and ProxyAddress are required", im)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrHandlerClosed
	}
	e, ok := h.ims[im]
	if !ok {
		e = &imEntry{addr: im, dials: &h.dials, tls: h.opts.TLS}
		h.ims[im] = e
	}
	h.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cc != nil && !h.needsCheckLocked(e) {
		return e, nil
	}
	if e.cc == nil {
		if err := e.dialLocked(); err != nil {
			return nil, err
		}
	}
	if err := h.checkLocked(ctx, e); err != nil {
		e.closeLocked() // re-dial on next use
		return nil, err
	}
	return e, nil
}

func (h *Handler) needsCheckLocked(e *imEntry) bool {
	if time.Since(e.lastCheck) >= h.opts.CheckInterval {
		return true
	}
	for _, cc := range []*grpc.ClientConn{e.cc, e.pcc} {
		if s := cc.GetState(); s == connectivity.TransientFailure || s == connectivity.Shutdown {
			return true
		}
	}
	return false
}

// checkLocked negotiates the API version on the instance API and pings the proxy.
func (h *Handler) checkLocked(ctx context.Context, e *imEntry) error {
	ctx, cancel := context.WithTimeout(ctx, h.opts.CheckTimeout)
	defer cancel()
	v, err := imrpc.NewInstanceServiceClient(e.cc).VersionGet(ctx, &imrpc.Empty{})
	if err != nil {
		return callError("instance manager "+e.addr.Address, "VersionGet", err)
	}
	versions := versionsFromRPC(v)
	if err := CheckCompatibility(versions); err != nil {
		return fmt.Errorf("instance manager %s (version %s): %w", e.addr.Address, v.GetVersion(), err)
	}
	if ProxySupported(versions) {
		if _, err := imrpc.NewProxyEngineServiceClient(e.pcc).Ping(ctx, &imrpc.Empty{}); err != nil {
			return callError("instance manager proxy "+e.addr.ProxyAddress, "Ping", err)
		}
	}
	e.versions, e.lastCheck = versions, time.Now()
	return nil
}

var dialOptions = []grpc.DialOption{
	grpc.WithTransportCredentials(insecure.NewCredentials()),
	grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}),
}

func (e *imEntry) dialLocked() error {
	opts := dialOptions
	if e.tls != nil {
		opts = append(slices.Clone(dialOptions), grpc.WithTransportCredentials(credentials.NewTLS(e.tls)))
	}
	cc, err := grpc.NewClient("passthrough:///"+e.addr.Address, opts...)
	if err != nil {
		return fmt.Errorf("instance manager %s: %w", e.addr.Address, err)
	}
	pcc, err := grpc.NewClient("passthrough:///"+e.addr.ProxyAddress, opts...)
	if err != nil {
		_ = cc.Close()
		return fmt.Errorf("instance manager proxy %s: %w", e.addr.ProxyAddress, err)
	}
	e.cc, e.pcc = cc, pcc
	e.dials.Add(1)
	return nil
}

func (e *imEntry) closeLocked() {
	for _, cc := range []*grpc.ClientConn{e.cc, e.pcc} {
		if cc != nil {
			_ = cc.Close()
		}
	}
	for _, cc := range e.engines {
		_ = cc.Close()
	}
	e.cc, e.pcc, e.lastCheck, e.engines = nil, nil, time.Time{}, nil
}

// suspect makes the next use of the entry check the connection first; call
// it after a call failed with Unavailable.
func (e *imEntry) suspect(err error) {
	if IsUnavailable(err) {
		e.mu.Lock()
		e.lastCheck = time.Time{}
		e.mu.Unlock()
	}
}

// callContext gives ctx DefaultCallTimeout when it has no deadline.
func callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultCallTimeout)
}

func versionsFromRPC(v *imrpc.VersionResponse) APIVersions {
	return APIVersions{
		Version: v.GetVersion(), GitCommit: v.GetGitCommit(), BuildDate: v.GetBuildDate(),
		InstanceManagerMin: v.GetInstanceManagerApiMinVersion(), InstanceManagerCurrent: v.GetInstanceManagerApiVersion(),
		ProxyMin: v.GetInstanceManagerProxyApiMinVersion(), ProxyCurrent: v.GetInstanceManagerProxyApiVersion(),
	}
}
