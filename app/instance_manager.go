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
	mgr, err := process.NewManager(process.Config{
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
