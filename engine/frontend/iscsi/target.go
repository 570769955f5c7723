// Package iscsi is the engine's iSCSI frontend: an iSCSI target (RFC 7143)
// serving one volume as LUN 1 (LUN 0 is a storage array controller, as tgt
// presents Longhorn volumes) of the target iqn.2019-10.io.longhorn:<volume>.
//
// Each TCP connection is one session (MaxConnections=1, ErrorRecoveryLevel
// 0). A reader goroutine parses PDUs; SCSI commands run concurrently against
// the Backend through the device server in package scsi; a writer goroutine
// batches responses into writev calls.
package iscsi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/frontend/iscsi/scsi"
)

// IQNPrefix is the naming authority of Longhorn targets.
const IQNPrefix = "iqn.2019-10.io.longhorn:"

// DefaultPort is the iSCSI well-known port (RFC 7143 14.1).
const DefaultPort = 3260

// Frontend state strings (Longhorn's frontendState).
const (
	StateUp   = "up"
	StateDown = "down"
)

// LUN numbers of the target.
const (
	ControllerLUN = 0
	VolumeLUN     = 1
)

// IQN returns the target name of a volume: lower case, '_' becomes ':'
// (as Longhorn names its tgt targets).
func IQN(volume string) string {
	return IQNPrefix + strings.ReplaceAll(strings.ToLower(volume), "_", ":")
}

// Config configures a Target.
type Config struct {
	// Listen is HOST:PORT of the portal; PORT 0 picks a free port.
	Listen string
	// CHAPUser and CHAPSecret, when both set, require one-way CHAP
	// (RFC 7143 12.1.3) on every session, discovery included. RFC 7143
	// asks for secrets of at least 12 bytes.
	CHAPUser   string
	CHAPSecret string
	// PreferCRC32C selects CRC32C header and data digests whenever the
	// initiator offers them (for tests; the default follows the initiator's
	// first choice, which is usually None).
	PreferCRC32C bool
	// Log receives connection and session events; nil uses logrus.
	Log *logrus.Entry
}

// Errors of Startup and the other Frontend methods.
var (
	ErrRunning    = errors.New("iscsi: target already started")
	ErrNotRunning = errors.New("iscsi: target not started")
	ErrConfig     = errors.New("iscsi: invalid configuration")
)

// Target is the iSCSI frontend; it implements frontend.Frontend.
type Target struct {
	cfg Config
	lim limits
	log *logrus.Entry

	mu       sync.Mutex
	running  bool
	iqn      string
	ln       net.Listener
	endpoint string
	lu       *scsi.LU
	units    map[uint16]scsi.Unit
	absent   scsi.Unit
	sessions map[uint16]*session
	conns    map[*conn]struct{}
	nextTSIH uint16
	pool     *workerPool
	wg       sync.WaitGroup
}

var _ frontend.Frontend = (*Target)(nil)

// New returns a stopped target. It checks the listen address and the CHAP
// settings (user and secret both set or both empty).
func New(cfg Config) (*Target, error) {
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		return nil, fmt.Errorf("%w: listen address %q: %v", ErrConfig, cfg.Listen, err)
	}
	if (cfg.CHAPUser == "") != (cfg.CHAPSecret == "") {
		return nil, fmt.Errorf("%w: CHAP user and secret must be set together", ErrConfig)
	}
	log := cfg.Log
	if log == nil {
		log = logrus.WithField("frontend", "iscsi")
	}
	lim := defaultLimits
	lim.preferCRC32C = cfg.PreferCRC32C
	return &Target{cfg: cfg, lim: lim, log: log}, nil
}

// FrontendName returns "iscsi".
func (t *Target) FrontendName() string { return "iscsi" }

// Startup listens on the portal and serves volume name (size bytes) from
// backend as LUN 1 of IQN(name).
func (t *Target) Startup(ctx context.Context, name string, size int64, backend frontend.Backend) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running {
		return ErrRunning
	}
	iqn := IQN(name)
	luns := []uint16{ControllerLUN, VolumeLUN}
	lu, err := scsi.NewLU(scsi.Config{Name: name, Size: size, TargetName: iqn, RelativePortID: 1, LUNs: luns}, backend)
	if err != nil {
		return fmt.Errorf("iscsi: volume %q size %d: %w", name, size, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", t.cfg.Listen)
	if err != nil {
		return fmt.Errorf("iscsi: listen %s: %w", t.cfg.Listen, err)
	}
	t.iqn, t.ln, t.lu = iqn, ln, lu
	t.units = map[uint16]scsi.Unit{ControllerLUN: &scsi.Controller{LUNs: luns}, VolumeLUN: lu}
	t.absent = &scsi.Absent{LUNs: luns}
	t.sessions = map[uint16]*session{}
	t.conns = map[*conn]struct{}{}
	t.pool = newWorkerPool()
	t.endpoint = fmt.Sprintf("iscsi://%s/%s/%d", advertisedAddr(ln.Addr().(*net.TCPAddr)), iqn, VolumeLUN)
	t.running = true
	t.wg.Add(1)
	go t.acceptLoop(ln)
	t.log.WithFields(logrus.Fields{"endpoint": t.endpoint}).Info("iSCSI target started")
	return nil
}

// advertisedAddr is the portal address for endpoints and SendTargets when
// the listener is bound to a wildcard address: the first non-loopback IPv4
// address of the host, else 127.0.0.1.
func advertisedAddr(a *net.TCPAddr) string {
	if !a.IP.IsUnspecified() {
		return a.String()
	}
	host := "127.0.0.1"
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, x := range addrs {
			if n, ok := x.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				host = n.IP.String()
				break
			}
		}
	}
	return net.JoinHostPort(host, fmt.Sprint(a.Port))
}

func (t *Target) acceptLoop(ln net.Listener) {
	defer t.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				t.log.WithError(err).Warn("iSCSI accept failed")
			}
			return
		}
		c := newConn(t, nc)
		t.mu.Lock()
		if !t.running {
			t.mu.Unlock()
			nc.Close()
			continue
		}
		t.conns[c] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go func() {
			defer t.wg.Done()
			c.serve()
			t.mu.Lock()
			delete(t.conns, c)
			t.mu.Unlock()
		}()
	}
}

// Shutdown closes the listener and every connection and waits until every
// in-flight command finished.
func (t *Target) Shutdown() error {
	t.mu.Lock()
	if !t.running {
		t.mu.Unlock()
		return nil
	}
	t.running = false
	t.ln.Close()
	for c := range t.conns {
		c.abort()
	}
	t.endpoint = ""
	pool := t.pool
	t.mu.Unlock()
	t.wg.Wait()
	pool.stop()
	t.log.Info("iSCSI target stopped")
	return nil
}

// Expand changes the capacity of LUN 1; initiators see CAPACITY DATA HAS
// CHANGED on their next command.
func (t *Target) Expand(size int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.running {
		return ErrNotRunning
	}
	t.lu.SetSize(size)
	return nil
}

// Endpoint returns iscsi://HOST:PORT/IQN/1, or "" when stopped.
func (t *Target) Endpoint() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.endpoint
}

// State is "up" while serving, "down" otherwise.
func (t *Target) State() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running {
		return StateUp
	}
	return StateDown
}

// Addr returns the listening address (for tests that listen on port 0).
func (t *Target) Addr() net.Addr {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ln == nil {
		return nil
	}
	return t.ln.Addr()
}

// unit returns the logical unit for a LUN field of a PDU.
func (t *Target) unit(field uint64) (uint16, scsi.Unit) {
	lun, ok := scsi.DecodeLUN(field)
	if !ok {
		return 0xffff, t.absent
	}
	if u, ok := t.units[lun]; ok {
		return lun, u
	}
	return lun, t.absent
}
