// Package nbd is the engine's NBD frontend: a server for the Network Block
// Device protocol (github.com/NetworkBlockDevice/nbd doc/proto.md) that exposes
// one volume, served from a frontend.Backend, over a unix socket or TCP.
//
// Protocol coverage: fixed newstyle handshake; options NBD_OPT_GO, NBD_OPT_INFO
// (NBD_INFO_EXPORT, NBD_INFO_BLOCK_SIZE, NBD_INFO_NAME, NBD_INFO_DESCRIPTION),
// NBD_OPT_EXPORT_NAME, NBD_OPT_LIST and NBD_OPT_ABORT, every other option is
// answered NBD_REP_ERR_UNSUP; simple replies only; commands READ, WRITE, FLUSH,
// TRIM, WRITE_ZEROES (zeroes are written, so NO_HOLE always holds) and DISC,
// with the FUA flag (a flush after the command). Transmission flags:
// HAS_FLAGS, SEND_FLUSH, SEND_FUA, SEND_TRIM, SEND_WRITE_ZEROES, CAN_MULTI_CONN.
//
// Requests are executed concurrently (many in flight per connection, any number
// of connections) and replies are written as they complete, batched into one
// writev per burst. A protocol error closes only that connection.
package nbd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/bufpool"
	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/rawio"
)

// Defaults of Config.
const (
	// DefaultSocketDir holds the unix socket of a volume when Config.Listen is
	// empty: DefaultSocketDir/<volume>.sock.
	DefaultSocketDir = "/var/run/longhorn/nbd"
	// DefaultMaxPayload is the largest READ or WRITE accepted (32 MiB), the
	// value advertised as NBD_INFO_BLOCK_SIZE maximum payload.
	DefaultMaxPayload = 32 << 20
	// MaxMaxPayload is the upper limit for Config.MaxPayload (64 MiB).
	MaxMaxPayload = bufpool.MaxSize
	// DefaultHandshakeTimeout bounds option haggling of one connection.
	DefaultHandshakeTimeout = 30 * time.Second
	// DefaultInflightBytes bounds the payload bytes in flight per connection.
	DefaultInflightBytes = 128 << 20
	// shutdownGrace is how long Shutdown waits for requests in flight before
	// it closes connections under them.
	shutdownGrace = 30 * time.Second
	// timeoutDialStale bounds the probe of an existing socket file.
	timeoutDialStale = time.Second
)

// Frontend state strings, as Longhorn reports them.
const (
	StateUp   = "up"
	StateDown = "down"
)

// Config configures a Server. The zero value listens on
// DefaultSocketDir/<volume>.sock with the default limits.
type Config struct {
	// Listen is "unix:PATH" or "tcp:HOST:PORT" (PORT 0 picks a free port);
	// empty means "unix:DefaultSocketDir/<volume>.sock".
	Listen string
	// Description is returned for NBD_INFO_DESCRIPTION; empty omits it.
	Description string
	// MaxPayload caps READ/WRITE lengths in bytes (1 MiB..MaxMaxPayload);
	// 0 means DefaultMaxPayload.
	MaxPayload uint32
	// HandshakeTimeout bounds option haggling; 0 means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// InflightBytes bounds payload bytes in flight per connection; 0 means
	// DefaultInflightBytes.
	InflightBytes int64
}

// Errors returned by New and Startup.
var (
	// ErrListen reports an invalid Config.Listen.
	ErrListen = errors.New("nbd: invalid listen address")
	// ErrConfig reports an invalid limit in Config.
	ErrConfig = errors.New("nbd: invalid config")
	// ErrAlreadyUp is returned by Startup on a started server.
	ErrAlreadyUp = errors.New("nbd: frontend already started")
	// ErrShrink is returned by Expand for a size below the current one.
	ErrShrink = errors.New("nbd: volume size cannot shrink")
)

// ParseListen splits a listen spec "unix:PATH" or "tcp:HOST:PORT" into a
// network ("unix" or "tcp") and an address. Errors wrap ErrListen.
func ParseListen(spec string) (network, address string, err error) {
	kind, addr, ok := strings.Cut(spec, ":")
	if !ok || addr == "" {
		return "", "", fmt.Errorf("%w %q: want unix:PATH or tcp:HOST:PORT", ErrListen, spec)
	}
	switch kind {
	case "unix":
		if !filepath.IsAbs(addr) {
			return "", "", fmt.Errorf("%w %q: unix socket path must be absolute", ErrListen, spec)
		}
		return "unix", filepath.Clean(addr), nil
	case "tcp":
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", "", fmt.Errorf("%w %q: %v", ErrListen, spec, err)
		}
		return "tcp", addr, nil
	}
	return "", "", fmt.Errorf("%w %q: scheme %q, want unix or tcp", ErrListen, spec, kind)
}

// Server is the NBD frontend of one volume; it implements frontend.Frontend.
// Startup and Shutdown may alternate any number of times.
type Server struct {
	cfg        Config
	maxPayload uint32

	size atomic.Uint64 // current export size in bytes

	mu       sync.Mutex
	up       bool
	closing  bool
	name     string
	backend  frontend.Backend
	flusher  *flusher
	ln       net.Listener
	pre      *TakeOver // a socket taken over from an old engine, used by the next Startup
	endpoint string
	conns    map[*conn]struct{}
	connWG   sync.WaitGroup
	log      *logrus.Entry
}

var _ frontend.Frontend = (*Server)(nil)

// New returns a stopped NBD frontend. It validates cfg: errors wrap ErrListen
// or ErrConfig and name the field.
func New(cfg Config) (*Server, error) {
	if cfg.Listen != "" {
		if _, _, err := ParseListen(cfg.Listen); err != nil {
			return nil, err
		}
	}
	if cfg.MaxPayload == 0 {
		cfg.MaxPayload = DefaultMaxPayload
	}
	if cfg.MaxPayload < 1<<20 || cfg.MaxPayload > MaxMaxPayload {
		return nil, fmt.Errorf("%w: MaxPayload %d outside [%d, %d]", ErrConfig, cfg.MaxPayload, 1<<20, MaxMaxPayload)
	}
	if len(cfg.Description) > maxStringBytes {
		return nil, fmt.Errorf("%w: Description of %d bytes exceeds %d", ErrConfig, len(cfg.Description), maxStringBytes)
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.InflightBytes <= 0 {
		cfg.InflightBytes = DefaultInflightBytes
	}
	return &Server{cfg: cfg, maxPayload: cfg.MaxPayload}, nil
}

// FrontendName returns "nbd".
func (s *Server) FrontendName() string { return "nbd" }

// Startup listens and serves volume name (size bytes) from backend. It returns
// once the listener accepts connections. A stale unix socket at the path is
// replaced; any other existing file is an error.
func (s *Server) Startup(ctx context.Context, name string, size int64, backend frontend.Backend) error {
	if name == "" || len(name) > maxStringBytes || strings.ContainsRune(name, 0) {
		return fmt.Errorf("%w: volume name %q must be 1..%d bytes without NUL", ErrConfig, name, maxStringBytes)
	}
	if size < 0 {
		return fmt.Errorf("%w: size %d is negative", ErrConfig, size)
	}
	if backend == nil {
		return fmt.Errorf("%w: nil backend", ErrConfig)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.up {
		return ErrAlreadyUp
	}
	network, addr, err := s.listenAddr(name)
	if err != nil {
		return err
	}
	var ln net.Listener
	if s.pre != nil && network == "unix" && s.pre.path == addr {
		ln, s.pre = s.pre.ln, nil
	} else if ln, err = listen(ctx, network, addr); err != nil {
		return err
	}
	s.size.Store(uint64(size))
	s.up, s.closing = true, false
	s.name, s.backend, s.ln = name, backend, ln
	s.flusher = &flusher{fn: backend.Flush}
	s.conns = map[*conn]struct{}{}
	s.endpoint = endpointURI(network, ln.Addr().String(), name)
	s.log = logrus.WithField("frontend", "nbd").WithField("volume", name)
	s.log.WithField("endpoint", s.endpoint).Info("nbd: frontend started")
	go s.acceptLoop(ln)
	return nil
}

// listenAddr resolves Config.Listen, defaulting to a socket named after the volume.
func (s *Server) listenAddr(name string) (string, string, error) {
	if s.cfg.Listen == "" {
		if strings.ContainsAny(name, "/\\") {
			return "", "", fmt.Errorf("%w: volume name %q cannot name a socket file", ErrConfig, name)
		}
		return "unix", filepath.Join(DefaultSocketDir, name+".sock"), nil
	}
	return ParseListen(s.cfg.Listen)
}

// listen opens the listener; for unix sockets see listenUnix.
func listen(ctx context.Context, network, addr string) (net.Listener, error) {
	if network == "unix" {
		return listenUnix(ctx, addr)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("nbd: listen %s %s: %w", network, addr, err)
	}
	return ln, nil
}

// endpointURI formats the NBD URI clients use (libnbd/qemu syntax).
func endpointURI(network, addr, name string) string {
	if network == "unix" {
		return fmt.Sprintf("nbd+unix:///%s?socket=%s", name, addr)
	}
	return fmt.Sprintf("nbd://%s/%s", addr, name)
}

// acceptLoop accepts connections until the listener closes.
func (s *Server) acceptLoop(ln net.Listener) {
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosing() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (e.g. EMFILE): back off, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.WithError(err).Warn("nbd: accept")
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.startConn(nc)
	}
}

// startConn registers a connection and serves it in its own goroutine.
func (s *Server) startConn(nc net.Conn) {
	nc = rawio.Wrap(nc)
	c := &conn{
		srv:    s,
		nc:     nc,
		br:     bufio.NewReaderSize(nc, 128<<10),
		budget: newBudget(s.cfg.InflightBytes),
	}
	c.log = s.log.WithField("remote", remoteName(nc))
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	s.mu.Unlock()
	go s.runConn(c)
}

// runConn negotiates and then serves one connection.
func (s *Server) runConn(c *conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.connWG.Done()
	}()
	_ = c.nc.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	n := negotiation{r: c.br, w: bufio.NewWriterSize(c.nc, 4096), exp: s.export}
	if err := n.run(); err != nil {
		if !errors.Is(err, errAborted) && !s.isClosing() {
			c.log.WithError(err).Debug("nbd: handshake ended")
		}
		_ = c.nc.Close()
		return
	}
	_ = c.nc.SetDeadline(time.Time{})
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		_ = c.nc.Close()
		return
	}
	c.serve()
}

func remoteName(nc net.Conn) string {
	if a := nc.RemoteAddr(); a != nil && a.String() != "" && a.String() != "@" {
		return a.String()
	}
	return "unix"
}

// export is the current export description for option haggling.
func (s *Server) export() export {
	return export{
		name:        s.name,
		description: s.cfg.Description,
		size:        s.size.Load(),
		flags:       transmissionFlags,
		minBlock:    1,
		prefBlock:   4096,
		maxPayload:  s.maxPayload,
	}
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Shutdown stops accepting, stops reading requests, waits for the requests in
// flight to be answered (at most 30 s, then it closes connections under them)
// and closes every connection. It is a no-op on a stopped server.
func (s *Server) Shutdown() error {
	s.mu.Lock()
	if !s.up {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	err := s.ln.Close()
	past := time.Unix(1, 0)
	for c := range s.conns {
		_ = c.nc.SetReadDeadline(past)
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownGrace):
		s.mu.Lock()
		for c := range s.conns {
			_ = c.nc.Close()
		}
		s.mu.Unlock()
		<-done
	}
	s.mu.Lock()
	s.up = false
	s.endpoint = ""
	s.mu.Unlock()
	s.log.Info("nbd: frontend stopped")
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("nbd: close listener: %w", err)
	}
	return nil
}

// Expand sets the size reported to connections negotiated from now on and the
// bound checked on every request. Shrinking is refused with ErrShrink.
func (s *Server) Expand(size int64) error {
	for {
		cur := s.size.Load()
		if size < 0 || uint64(size) < cur {
			return fmt.Errorf("%w: %d < current %d bytes", ErrShrink, size, cur)
		}
		if s.size.CompareAndSwap(cur, uint64(size)) {
			return nil
		}
	}
}

// Endpoint returns the NBD URI of the export ("nbd+unix:///VOL?socket=PATH" or
// "nbd://HOST:PORT/VOL"), or "" when stopped.
func (s *Server) Endpoint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoint
}

// State returns StateUp while serving and StateDown otherwise.
func (s *Server) State() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.up && !s.closing {
		return StateUp
	}
	return StateDown
}
