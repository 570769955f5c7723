package app

import (
	"context"
	"fmt"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/longhorn-go/longhorn/engineapi"
	"github.com/longhorn-go/longhorn/instance-manager/cgroup"
	"github.com/longhorn-go/longhorn/instance-manager/logfile"
	"github.com/longhorn-go/longhorn/instance-manager/process"
	"github.com/longhorn-go/longhorn/instance-manager/server"
)

func init() { registerCommand(instanceManagerCommand()) }

func instanceManagerCommand() *cli.Command {
	return &cli.Command{
		Name:  "instance-manager",
		Usage: "run the instance manager: gRPC process manager, instance service and engine proxy of one node",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: ":8500", Usage: "process manager and instance service address HOST:PORT"},
			&cli.StringFlag{Name: "proxy-listen", Value: ":8501", Usage: "engine proxy address HOST:PORT"},
			&cli.StringFlag{Name: "data-root", Value: "/var/lib/longhorn/instance-manager", Usage: "directory for process logs (DIR/logs/NAME.log)"},
			&cli.StringFlag{Name: "port-range", Value: process.DefaultPortRange.String(), Usage: "ports for engine and replica processes, START-END inclusive"},
			&cli.DurationFlag{Name: "stop-timeout", Value: 10 * time.Second, Usage: "how long a stopping process may take before SIGKILL"},
			&cli.Int64Flag{Name: "log-max-size", Value: logfile.DefaultMaxSize, Usage: "bytes per process log file before rotation"},
			&cli.IntFlag{Name: "log-max-files", Value: logfile.DefaultMaxFiles, Usage: "rotated log files kept per process"},
			&cli.StringFlag{Name: "tls-dir", Value: engineapi.TLSDir, Usage: "directory of the Secret longhorn-grpc-tls (ca.crt, tls.crt, tls.key): when the files are there every service serves mutual TLS, else plaintext"},
			&cli.BoolFlag{Name: "cgroups", Value: true, Usage: "run every engine and replica process in its own cgroup below the instance manager's, where per-volume resource limits apply (false: no cgroups; limits are refused)"},
			&cli.BoolFlag{Name: "no-proxy", Usage: "play an instance manager older than the engine proxy (tests of the upgrade path): report proxy API version 0 and serve nothing on --proxy-listen"},
		},
		Action: runInstanceManager,
	}
}

func runInstanceManager(c *cli.Context) error {
	pr, err := process.ParsePortRange(c.String("port-range"))
	if err != nil {
		return fmt.Errorf("--port-range: %w", err)
	}
	if c.Int64("log-max-size") <= 0 || c.Int("log-max-files") < 0 {
		return fmt.Errorf("--log-max-size must be > 0 and --log-max-files >= 0")
	}
	if c.Duration("stop-timeout") <= 0 {
		return fmt.Errorf("--stop-timeout must be > 0")
	}
	cg, cgWhy := processCgroups(c.Bool("cgroups"))
	if cg != nil {
		defer func() {
			if err := cg.Close(); err != nil {
				logrus.WithError(err).Warn("instance manager: removing the process cgroups")
			}
		}()
	}
	mgr, err := process.NewManager(process.Config{
		Cgroups: cg, CgroupsUnavailable: cgWhy,
		PortRange: pr, PortProbe: process.HostPortFree,
		LogDir:     filepath.Join(c.String("data-root"), "logs"),
		LogMaxSize: c.Int64("log-max-size"), LogMaxFiles: c.Int("log-max-files"),
		StopTimeout: c.Duration("stop-timeout"),
		OnExit:      cleanupBlockdevOnExit(logrus.StandardLogger()),
	})
	if err != nil {
		return err
	}
	tlsCfg, err := engineapi.ServerTLSFromDir(c.String("tls-dir"))
	if err != nil {
		return fmt.Errorf("--tls-dir: %w", err)
	}
	logrus.WithField("tls", tlsCfg != nil).Info("instance manager: gRPC transport")
	srv, err := server.New(server.Config{Listen: c.String("listen"), ProxyListen: c.String("proxy-listen"), Manager: mgr,
		NoProxy: c.Bool("no-proxy"), TLS: tlsCfg})
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// One instance manager per node serves every volume's processes: it pays
	// for the whole binary's start-up pages as engine and replica do.
	trimAfterStart(ctx, "instance manager")
	var serveErr error
	select {
	case <-ctx.Done():
		logrus.Info("instance manager: signal received, stopping all processes")
	case serveErr = <-srv.Err():
		logrus.WithError(serveErr).Error("instance manager: server failed, stopping all processes")
	}
	sctx, cancel := context.WithTimeout(context.Background(), c.Duration("stop-timeout")+10*time.Second)
	defer cancel()
	if err := srv.Stop(sctx); err != nil {
		return err
	}
	logrus.Info("instance manager: stopped")
	return serveErr
}

// processCgroups makes the per-process cgroup manager, or says why there is
// none (limits are then refused with that reason).
func processCgroups(enabled bool) (*cgroup.Manager, string) {
	if !enabled {
		return nil, "started with --cgroups=false"
	}
	layout, err := cgroup.DetectHostLayout()
	if err == nil {
		var m *cgroup.Manager
		if m, err = cgroup.New(cgroup.Options{Layout: layout}); err == nil {
			for _, c := range []string{"cpu", "memory", "blkio", "io"} {
				if ok, why := m.Usable(c); !ok && why != "" {
					logrus.Warnf("instance manager: cgroup controller %s unusable: %s", c, why)
				}
			}
			logrus.WithField("version", layout.Version).Info("instance manager: processes run in their own cgroups")
			return m, ""
		}
	}
	logrus.WithError(err).Warn("instance manager: no per-process cgroups; resource limits will be refused")
	return nil, err.Error()
}
