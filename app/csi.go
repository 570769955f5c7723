package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"

	"github.com/longhorn-go/longhorn/csi"
	"github.com/longhorn-go/longhorn/meta"
)

// `longhorn csi`: the CSI plugin (Longhorn's `longhorn-manager csi`), run
// by the plugin DaemonSet (node service, kubelet registration, health) and
// beside the controller sidecars.
func init() {
	registerCommand(&cli.Command{
		Name:  "csi",
		Usage: "run the CSI plugin (driver.longhorn.io): identity, controller and node services",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "endpoint", Value: "unix:///csi/csi.sock", EnvVars: []string{"CSI_ENDPOINT"}, Usage: "CSI socket"},
			&cli.StringFlag{Name: "drivername", Value: csi.DefaultDriverName, Usage: "CSI driver name"},
			&cli.StringFlag{Name: "nodeid", EnvVars: []string{"NODE_ID"}, Usage: "this node's name (required)"},
			&cli.StringFlag{Name: "manager-url", Value: "http://longhorn-backend:9500/v1", Usage: "the manager's REST API"},
			&cli.BoolFlag{Name: "node-service", Value: true, Usage: "serve the Node service"},
			&cli.BoolFlag{Name: "controller-service", Value: true, Usage: "serve the Controller service"},
			&cli.StringFlag{Name: "plugin-registry-dir", Usage: "kubelet's plugin registry directory (e.g. /var/lib/kubelet/plugins_registry); empty: do not register"},
			&cli.StringFlag{Name: "kubelet-registration-path", Value: "/var/lib/kubelet/plugins/" + csi.DefaultDriverName + "/csi.sock",
				Usage: "the CSI socket's path on the host, as kubelet opens it"},
			&cli.IntFlag{Name: "health-port", Value: 9808, Usage: "port of GET /healthz (0: none)"},
		},
		Action: runCSI,
	})
}

func runCSI(c *cli.Context) error {
	if c.String("nodeid") == "" {
		return errors.New("csi: --nodeid is required")
	}
	d, err := csi.New(csi.Config{Endpoint: c.String("endpoint"), DriverName: c.String("drivername"), NodeID: c.String("nodeid"),
		ManagerURL: c.String("manager-url"), Version: meta.Version, Node: c.Bool("node-service"), Controller: c.Bool("controller-service")})
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.Serve(ctx) })
	if dir := c.String("plugin-registry-dir"); dir != "" {
		reg := csi.Registration{Dir: dir, Endpoint: c.String("kubelet-registration-path"), Driver: c.String("drivername"),
			OnStatus: func(err error) {
				if err != nil {
					logrus.WithError(err).Error("csi: kubelet plugin registration failed")
					stop()
					return
				}
				logrus.Info("csi: registered with kubelet")
			}}
		g.Go(func() error { return reg.Serve(ctx) })
	}
	if p := c.Int("health-port"); p > 0 {
		hs := csi.HealthServer(":"+strconv.Itoa(p), c.String("endpoint"))
		g.Go(func() error {
			go func() { <-ctx.Done(); _ = hs.Shutdown(context.Background()) }()
			if err := hs.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("csi: health endpoint: %w", err)
			}
			return nil
		})
	}
	return g.Wait()
}
