package nbd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// ErrHandOver reports a server that cannot take a socket over from another
// process (a live engine upgrade).
var ErrHandOver = errors.New("nbd: socket take-over")

// sockListener is a unix listener that removes its socket file on Close only
// while the path still names the socket it bound. Go's UnixListener unlinks
// its path unconditionally; during a live upgrade the new engine renames its
// own socket over the path before the old engine closes, and the old engine
// must not delete it.
type sockListener struct {
	*net.UnixListener
	path     string
	dev, ino uint64

	mu     sync.Mutex
	unlink bool
}

// wrapUnix takes over the unlinking of l's socket file at path.
func wrapUnix(l *net.UnixListener, path string) (*sockListener, error) {
	l.SetUnlinkOnClose(false)
	dev, ino, err := inodeOf(path)
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("nbd: stat socket %s: %w", path, err)
	}
	return &sockListener{UnixListener: l, path: path, dev: dev, ino: ino, unlink: true}, nil
}

// SetUnlinkOnClose sets whether Close removes the socket file (when it is
// still this listener's), as net.UnixListener.SetUnlinkOnClose.
func (l *sockListener) SetUnlinkOnClose(unlink bool) {
	l.mu.Lock()
	l.unlink = unlink
	l.mu.Unlock()
}

// Addr is the socket path clients use (a taken-over socket was bound under
// a temporary name).
func (l *sockListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

// Close stops listening and removes the socket file if the path still names
// this listener's socket.
func (l *sockListener) Close() error {
	err := l.UnixListener.Close()
	l.mu.Lock()
	unlink := l.unlink
	l.unlink = false
	l.mu.Unlock()
	if unlink {
		if dev, ino, serr := inodeOf(l.path); serr == nil && dev == l.dev && ino == l.ino {
			_ = os.Remove(l.path)
		}
	}
	return err
}

func inodeOf(path string) (dev, ino uint64, err error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, fmt.Errorf("no inode for %s", path)
	}
	return uint64(st.Dev), st.Ino, nil
}

// TakeOver is a socket bound by PrepareTakeOver and already renamed over the
// socket path of a running server of the same volume (the old engine of a
// live upgrade). From that moment clients that connect, or reconnect after
// the old server drained them, wait in this listener's backlog until
// Startup serves them. Commit or Revert ends it.
type TakeOver struct {
	srv  *Server
	path string // the socket path clients use
	prev string // hard link to the old server's socket, for Revert
	ln   *sockListener
}

// PrepareTakeOver binds the unix socket of volume name at a temporary path,
// keeps a hard link to the socket now at the path (the old server's) and
// renames the new socket over the path, which is atomic: a client always
// finds a listening socket there. The server's next Startup serves on it.
// Errors wrap ErrHandOver: TCP listeners ("not supported yet": the old
// server holds the port), a path without a socket, a server already started.
func (s *Server) PrepareTakeOver(ctx context.Context, name string) (*TakeOver, error) {
	network, path, err := s.listenAddr(name)
	if err != nil {
		return nil, err
	}
	if network != "unix" {
		return nil, fmt.Errorf("%w: live upgrade of the nbd frontend over %s is not supported yet (only unix sockets)",
			ErrHandOver, network)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.up || s.pre != nil {
		return nil, fmt.Errorf("%w: frontend already started or prepared", ErrHandOver)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("%w: no server socket at %s to take over: %v", ErrHandOver, path, err)
	}
	tmp, prev := path+".upgrade", path+".prev"
	_ = os.Remove(tmp)
	_ = os.Remove(prev)
	if err := os.Link(path, prev); err != nil {
		return nil, fmt.Errorf("%w: keep the old socket: %v", ErrHandOver, err)
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "unix", tmp)
	if err != nil {
		_ = os.Remove(prev)
		return nil, fmt.Errorf("%w: listen %s: %v", ErrHandOver, tmp, err)
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	if err := os.Rename(tmp, path); err != nil {
		_ = ul.Close()
		_ = os.Remove(tmp)
		_ = os.Remove(prev)
		return nil, fmt.Errorf("%w: rename %s over %s: %v", ErrHandOver, tmp, path, err)
	}
	sl, err := wrapUnix(ul, path)
	if err != nil {
		_ = os.Rename(prev, path)
		return nil, fmt.Errorf("%w: %v", ErrHandOver, err)
	}
	t := &TakeOver{srv: s, path: path, prev: prev, ln: sl}
	s.pre = t
	return t, nil
}

// Commit drops the link to the old server's socket; the take-over stays.
func (t *TakeOver) Commit() { _ = os.Remove(t.prev) }

// Revert gives the path back to the old server's socket and closes the
// prepared listener (clients in its backlog are reset and reconnect to the
// old server). It must run before Startup used the listener, or after the
// Shutdown that followed it.
func (t *TakeOver) Revert() error {
	t.srv.mu.Lock()
	if t.srv.pre == t {
		t.srv.pre = nil
	}
	t.srv.mu.Unlock()
	t.ln.SetUnlinkOnClose(false)
	err := os.Rename(t.prev, t.path)
	_ = t.ln.Close()
	if err != nil {
		return fmt.Errorf("%w: give %s back: %v", ErrHandOver, t.path, err)
	}
	return nil
}

// Path is the socket path taken over.
func (t *TakeOver) Path() string { return t.path }

// listenUnix opens a unix listener at addr (creating the directory and
// replacing a stale socket left by a dead process, and the files of a
// take-over that did not finish) that unlinks only its own socket on Close.
func listenUnix(ctx context.Context, addr string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(addr), 0o755); err != nil {
		return nil, fmt.Errorf("nbd: socket directory: %w", err)
	}
	if fi, err := os.Lstat(addr); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%w: %s exists and is not a socket", ErrListen, addr)
		}
		if c, err := net.DialTimeout("unix", addr, timeoutDialStale); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%w: %s is in use by another server", ErrListen, addr)
		}
		_ = os.Remove(addr)
	}
	// Left by a take-over whose new server died before it finished.
	_ = os.Remove(addr + ".prev")
	_ = os.Remove(addr + ".upgrade")
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "unix", addr)
	if err != nil {
		return nil, fmt.Errorf("nbd: listen unix %s: %w", addr, err)
	}
	return wrapUnix(l.(*net.UnixListener), addr)
}

// CanHandOver reports whether a new engine can take this running frontend
// over (PrepareTakeOver on the same socket path): only a unix socket can be
// renamed over; a TCP port cannot be shared ("not supported yet").
func (s *Server) CanHandOver() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.up {
		return fmt.Errorf("%w: frontend is not up", ErrHandOver)
	}
	if _, ok := s.ln.(*sockListener); !ok {
		return fmt.Errorf("%w: live upgrade of the nbd frontend over tcp is not supported yet (only unix sockets)", ErrHandOver)
	}
	return nil
}

// EndpointFor is the endpoint Startup would report for volume name, without
// listening (a live upgrade compares it with the old engine's).
func (s *Server) EndpointFor(name string) (string, error) {
	network, addr, err := s.listenAddr(name)
	if err != nil {
		return "", err
	}
	return endpointURI(network, addr, name), nil
}

// HandOverSocket is the socket path of a running unix listener ("" for TCP
// or a stopped server): the path a new engine takes over.
func (s *Server) HandOverSocket() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.ln.(*sockListener); ok && s.up {
		return l.path
	}
	return ""
}
