// Package controller is the engine of one volume (`longhorn engine controller
// VOLUME`): it replicates block I/O to N replica processes (replicator.go),
// serves the volume to a frontend (nbd, iscsi), and runs the volume
// operations of Longhorn's engine: start, snapshot, revert, expand, replica
// add/remove with rebuild, snapshot remove/purge (longhorn-engine
// pkg/controller, whose behaviour it follows; the code is our own).
//
// Locks, in order: opMu (one volume operation at a time), then the
// replicator's ioMu (held shared by every I/O, exclusively by operations that
// must see no I/O in flight: snapshot, membership, revert, expansion), then mu
// (small state). The I/O path never takes opMu or mu.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/engine/dataconn"
	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/replica"
)

// Frontend states as Longhorn reports them.
const (
	FrontendUp   = "up"
	FrontendDown = "down"
)

// Volume states reported by VolumeGet.
const (
	StateRunning = "running"
	StateStopped = "stopped"
)

// Errors of volume operations. gRPC handlers map them to codes.
var (
	// ErrInvalid is a request with a bad argument (wrapped with the detail).
	ErrInvalid = errors.New("invalid argument")
	// ErrPrecondition is a request the volume's state does not allow now.
	ErrPrecondition = errors.New("operation not allowed now")
	// ErrNotFound names an unknown replica or snapshot.
	ErrNotFound = errors.New("not found")
)

// VolumeOptions configure one volume's engine controller (the flags of `longhorn engine controller`).
type VolumeOptions struct {
	// Name is the volume name.
	Name string
	// Size and CurrentSize are --size and --current-size in bytes.
	Size, CurrentSize int64
	// EngineReplicaTimeout fails a replica that does not answer a request in
	// time (default 8 s).
	EngineReplicaTimeout time.Duration
	// DisableRevisionCounter and SalvageRequested select how Start picks
	// the replicas with the newest data.
	DisableRevisionCounter bool
	SalvageRequested       bool
	// UnmapMarkSnapChainRemoved is pushed to every replica.
	UnmapMarkSnapChainRemoved bool
	// SnapshotMaxCount (0 = 250) and SnapshotMaxSize (bytes, 0 = none).
	SnapshotMaxCount int
	SnapshotMaxSize  int64
	// DataConns is the number of data connections per replica (default 2).
	DataConns int
	// RebuildConcurrentSyncLimit is 1..5 (default 1).
	RebuildConcurrentSyncLimit int
	// FileSyncHTTPClientTimeout is in seconds (default 30).
	FileSyncHTTPClientTimeout int
	// Frontend is started by Start once replicas are up ("" = none).
	Frontend string
	// NewFrontend builds a stopped frontend by name ("nbd", "iscsi").
	NewFrontend func(name string) (frontend.Frontend, error)
	Log         logrus.FieldLogger
}

// Controller is one volume's engine.
type Controller struct {
	opts VolumeOptions
	log  logrus.FieldLogger
	r    replicator

	opMu sync.Mutex

	mu                    sync.Mutex
	started               bool
	fe                    frontend.Frontend
	feName                string
	isExpanding           bool
	lastExpansionError    string
	lastExpansionFailedAt string
	unmapMarkChain        bool
	snapshotMaxCount      int
	snapshotMaxSize       int64
	syncLimit             int
	rebuilds              map[string]*rebuildState
	purgeCancel           context.CancelFunc // stops watchPurge
	handedOver            *handOver          // set while a new engine took the volume over
	wg                    sync.WaitGroup
}

// NewVolume returns a stopped volume engine; Start adds the replicas.
func NewVolume(opts VolumeOptions) (*Controller, error) {
	if opts.Name == "" {
		return nil, fmt.Errorf("%w: volume name is empty", ErrInvalid)
	}
	if opts.Size < 0 || opts.Size%SectorSize != 0 || opts.Size > replica.MaxVolumeSize {
		return nil, fmt.Errorf("%w: --size %d must be a multiple of %d up to %d", ErrInvalid, opts.Size, SectorSize,
			int64(replica.MaxVolumeSize))
	}
	if opts.EngineReplicaTimeout <= 0 {
		opts.EngineReplicaTimeout = 8 * time.Second
	}
	if opts.RebuildConcurrentSyncLimit <= 0 {
		opts.RebuildConcurrentSyncLimit = 1
	}
	if opts.FileSyncHTTPClientTimeout <= 0 {
		opts.FileSyncHTTPClientTimeout = 30
	}
	if opts.Log == nil {
		opts.Log = logrus.StandardLogger()
	}
	log := opts.Log.WithField("volume", opts.Name)
	c := &Controller{opts: opts, log: log, unmapMarkChain: opts.UnmapMarkSnapChainRemoved,
		snapshotMaxCount: opts.SnapshotMaxCount, snapshotMaxSize: opts.SnapshotMaxSize,
		syncLimit: opts.RebuildConcurrentSyncLimit, rebuilds: map[string]*rebuildState{}}
	c.r.timeout = opts.EngineReplicaTimeout
	c.r.log = log
	c.r.size = opts.Size
	c.r.onError = func(b *backend, err error) {}
	return c, nil
}

// Backend is the volume as frontends see it.
func (c *Controller) Backend() frontend.Backend { return &c.r }

// Name is the volume name.
func (c *Controller) Name() string { return c.opts.Name }

func (c *Controller) dataOpts() dataconn.Options {
	return dataconn.Options{Conns: c.opts.DataConns, Timeout: c.opts.EngineReplicaTimeout}
}

// watch marks b ERR when its data connection fails.
func (c *Controller) watch(b *backend) {
	if b.data == nil {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		<-b.data.Done()
		if err := b.data.Err(); err != nil && !errors.Is(err, dataconn.ErrClientClosed) {
			c.r.markERR(b, err)
		}
	}()
}

// findLocked returns the backend with address addr (normalized).
func (c *Controller) find(addr string) *backend {
	for _, b := range c.r.list() {
		if b.addr == addr {
			return b
		}
	}
	return nil
}

// addBackend appends b to the replica list. Caller holds opMu; this takes
// ioMu exclusively.
func (c *Controller) addBackend(b *backend) {
	c.r.ioMu.Lock()
	bs := append(append([]*backend(nil), c.r.list()...), b)
	c.r.setList(bs)
	c.r.ioMu.Unlock()
	c.watch(b)
	c.r.adjustTimeouts()
}

// closeBackend releases b's connections.
func closeBackend(b *backend) {
	if b.data != nil {
		b.data.Close()
	}
	if b.rem != nil {
		b.rem.close()
	}
}

// setMode changes a replica's mode (RW or ERR, as Longhorn's SetReplicaMode).
func (c *Controller) setMode(b *backend, m Mode, reason string) {
	switch m {
	case ModeERR:
		c.r.markERR(b, errors.New(reason))
	default:
		// Never resurrect a replica that markERR failed concurrently.
		for {
			cur := b.mode.Load()
			if Mode(cur) == ModeERR || b.mode.CompareAndSwap(cur, int32(m)) {
				break
			}
		}
		c.r.adjustTimeouts()
	}
}

// Shutdown stops the frontend, closes every replica connection and waits for
// background work. The replica processes keep running.
func (c *Controller) Shutdown() error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	err := c.shutdownFrontend()
	c.r.ioMu.Lock()
	bs := c.r.list()
	c.r.setList(nil)
	c.r.ioMu.Unlock()
	for _, b := range bs {
		closeBackend(b)
	}
	c.mu.Lock()
	c.started = false
	for _, rb := range c.rebuilds {
		rb.cancel()
	}
	if c.purgeCancel != nil {
		c.purgeCancel()
	}
	if c.handedOver != nil {
		c.handedOver.stopWatch()
	}
	c.mu.Unlock()
	c.wg.Wait()
	return err
}

// StartFrontend starts the named frontend (VolumeFrontendStart). Starting the
// frontend that already runs is a no-op.
func (c *Controller) StartFrontend(ctx context.Context, name string) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	return c.startFrontend(ctx, name)
}

func (c *Controller) startFrontend(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("%w: cannot start an empty frontend", ErrInvalid)
	}
	c.mu.Lock()
	expanding, fe := c.isExpanding, c.fe
	c.mu.Unlock()
	if expanding {
		return fmt.Errorf("%w: cannot start the frontend during an expansion", ErrPrecondition)
	}
	if fe != nil && fe.State() == FrontendUp {
		if fe.FrontendName() == name {
			return nil
		}
		return fmt.Errorf("%w: frontend %s is up, cannot start %s", ErrPrecondition, fe.FrontendName(), name)
	}
	if len(c.r.list()) == 0 {
		return fmt.Errorf("%w: no replicas: start the volume first", ErrPrecondition)
	}
	if c.opts.NewFrontend == nil {
		return fmt.Errorf("%w: no frontends available", ErrInvalid)
	}
	f, err := c.opts.NewFrontend(name)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := f.Startup(context.WithoutCancel(ctx), c.opts.Name, c.r.Size(), &c.r); err != nil {
		return fmt.Errorf("start frontend %s: %w", name, err)
	}
	c.mu.Lock()
	c.fe, c.feName = f, name
	c.mu.Unlock()
	c.log.WithFields(logrus.Fields{"frontend": name, "endpoint": f.Endpoint()}).Info("frontend up")
	return nil
}

// ShutdownFrontend stops the frontend (VolumeFrontendShutdown); in-flight
// requests finish first.
func (c *Controller) ShutdownFrontend() error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	return c.shutdownFrontend()
}

func (c *Controller) shutdownFrontend() error {
	c.mu.Lock()
	fe := c.fe
	c.mu.Unlock()
	if fe == nil {
		return nil
	}
	if err := fe.Shutdown(); err != nil {
		return err
	}
	return nil
}

func (c *Controller) frontendUp() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fe != nil && c.fe.State() == FrontendUp
}

// VolumeInfo is what VolumeGet reports.
type VolumeInfo struct {
	Name, State, Endpoint, Frontend, FrontendState string
	Size, CurrentSize                              int64
	ReplicaCount                                   int
	IsExpanding                                    bool
	LastExpansionError, LastExpansionFailedAt      string
	UnmapMarkSnapChainRemoved                      bool
	SnapshotMaxCount                               int
	SnapshotMaxSize                                int64
}

// Info describes the volume.
func (c *Controller) Info() VolumeInfo {
	size := c.r.Size()
	bs := c.r.list()
	c.mu.Lock()
	defer c.mu.Unlock()
	v := VolumeInfo{Name: c.opts.Name, State: StateStopped, Size: size, CurrentSize: size, ReplicaCount: len(bs),
		IsExpanding: c.isExpanding, LastExpansionError: c.lastExpansionError,
		LastExpansionFailedAt: c.lastExpansionFailedAt, UnmapMarkSnapChainRemoved: c.unmapMarkChain,
		SnapshotMaxCount: c.snapshotMaxCount, SnapshotMaxSize: c.snapshotMaxSize, FrontendState: FrontendDown,
		Frontend: c.feName}
	if c.started && len(bs) > 0 {
		v.State = StateRunning
	}
	if c.fe != nil {
		v.FrontendState = c.fe.State()
		v.Endpoint = c.fe.Endpoint()
	}
	return v
}

// ReplicaInfo is one replica as ReplicaList reports it.
type ReplicaInfo struct {
	Address      string
	InstanceName string
	Mode         Mode
	Error        string
}

// Replicas lists the replicas in the order they were added.
func (c *Controller) Replicas() []ReplicaInfo {
	var out []ReplicaInfo
	for _, b := range c.r.list() {
		b.errMu.Lock()
		msg := b.errMsg
		b.errMu.Unlock()
		out = append(out, ReplicaInfo{Address: b.addr, InstanceName: b.instanceName, Mode: b.getMode(), Error: msg})
	}
	return out
}

// Wait blocks until background work (monitors, rebuilds, expansions) ends;
// call after Shutdown.
func (c *Controller) Wait() { c.wg.Wait() }
