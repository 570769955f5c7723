// Package csi is Longhorn's CSI driver (`longhorn csi`, driver name
// driver.longhorn.io): the Identity, Controller and Node services of CSI
// spec v1 (github.com/container-storage-interface/spec). The controller side
// turns CSI calls into the manager's REST API (/v1 volumes and their
// actions), as Longhorn's driver does; the node side formats, checks, mounts
// and grows the volume's block device (/dev/longhorn/<volume>, the blockdev
// frontend's endpoint) with k8s.io/mount-utils. The node plugin registers
// itself with kubelet's plugin watcher and serves its own health endpoint
// (the node-driver-registrar and livenessprobe sidecars are not on the Go
// module proxy).
package csi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
)

// DefaultDriverName is Longhorn's CSI driver name.
const DefaultDriverName = "driver.longhorn.io"

// Config configures the driver.
type Config struct {
	// Endpoint is where the CSI services listen: unix:///path/csi.sock or
	// unix:/path (the sidecars' and kubelet's --csi-address).
	Endpoint string
	// DriverName is driver.longhorn.io unless overridden.
	DriverName string
	// NodeID is this node's name (the Kubernetes and Longhorn node name).
	NodeID string
	// ManagerURL is the manager's REST API, http://longhorn-backend:9500/v1.
	ManagerURL string
	// Version is reported by GetPluginInfo.
	Version string
	// Node enables the Node service (the plugin DaemonSet); Controller
	// enables the Controller service (it is served by every plugin, as
	// Longhorn's single `csi` command is run by both the DaemonSet and the
	// controller sidecar pods).
	Node, Controller bool
	// Mounter formats, mounts and resizes; nil uses the host's tools.
	Mounter Mounter
	// Timeouts: how long attach, detach, expand and create wait; 0 = 1m40s
	// (under the sidecars' --timeout=1m50s, so the sidecar retries rather
	// than abandons a call still in progress).
	Timeout time.Duration
	// Log; default logrus.StandardLogger().
	Log logrus.FieldLogger
}

// Driver holds the three services.
type Driver struct {
	cfg    Config
	client *Client
	srv    *grpc.Server
	log    logrus.FieldLogger
}

// New checks cfg and returns a driver that is not yet serving.
func New(cfg Config) (*Driver, error) {
	if cfg.DriverName == "" {
		cfg.DriverName = DefaultDriverName
	}
	if cfg.NodeID == "" {
		return nil, errors.New("csi: --nodeid is required")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 100 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	if cfg.Mounter == nil {
		cfg.Mounter = NewHostMounter()
	}
	c, err := NewClient(cfg.ManagerURL)
	if err != nil {
		return nil, err
	}
	return &Driver{cfg: cfg, client: c, log: cfg.Log.WithField("driver", cfg.DriverName)}, nil
}

// ParseEndpoint returns the unix socket path of a CSI endpoint
// (unix:///path, unix://path or unix:/path, or a plain path).
func ParseEndpoint(ep string) (string, error) {
	if !strings.Contains(ep, "://") && !strings.HasPrefix(ep, "unix:") {
		if ep == "" {
			return "", errors.New("csi: --endpoint is required")
		}
		return ep, nil
	}
	u, err := url.Parse(ep)
	if err != nil || u.Scheme != "unix" {
		return "", fmt.Errorf("csi: --endpoint %q: want unix:///path/to/csi.sock", ep)
	}
	p := u.Path
	if u.Host != "" {
		p = u.Host + p
	}
	if p == "" {
		p = u.Opaque
	}
	if p == "" {
		return "", fmt.Errorf("csi: --endpoint %q has no path", ep)
	}
	return p, nil
}

// Serve listens on the endpoint (removing a stale socket) and serves until
// ctx ends.
func (d *Driver) Serve(ctx context.Context) error {
	path, err := ParseEndpoint(d.cfg.Endpoint)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("csi: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("csi: remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("csi: listen %s: %w", path, err)
	}
	d.srv = grpc.NewServer(grpc.UnaryInterceptor(d.logCalls))
	csi.RegisterIdentityServer(d.srv, &identityServer{d: d})
	if d.cfg.Controller {
		csi.RegisterControllerServer(d.srv, &controllerServer{d: d})
	}
	if d.cfg.Node {
		csi.RegisterNodeServer(d.srv, &nodeServer{d: d, m: d.cfg.Mounter})
	}
	errc := make(chan error, 1)
	go func() { errc <- d.srv.Serve(ln) }()
	d.log.WithFields(logrus.Fields{"endpoint": path, "node": d.cfg.NodeID, "manager": d.cfg.ManagerURL,
		"controller": d.cfg.Controller, "nodeService": d.cfg.Node}).Info("csi: serving")
	select {
	case <-ctx.Done():
		d.srv.GracefulStop()
		return nil
	case err := <-errc:
		return err
	}
}

// logCalls logs every call with its outcome; secrets never reach the log
// (requests are logged by method name and volume id only).
func (d *Driver) logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := h(ctx, req)
	f := logrus.Fields{"method": info.FullMethod, "took": time.Since(start).Round(time.Millisecond)}
	if v, ok := req.(interface{ GetVolumeId() string }); ok && v.GetVolumeId() != "" {
		f["volume"] = v.GetVolumeId()
	}
	if err != nil {
		d.log.WithFields(f).WithError(err).Warn("csi call failed")
	} else if !strings.HasSuffix(info.FullMethod, "/Probe") && !strings.Contains(info.FullMethod, "GetCapabilities") {
		d.log.WithFields(f).Info("csi call")
	}
	return resp, err
}
