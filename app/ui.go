package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/longhorn-go/longhorn/ui"
)

func init() { registerCommand(uiCommand()) }

// uiCommand is `longhorn ui`: the web UI's files (embedded in the binary)
// and a proxy of /v1 to the manager API, as Longhorn's longhorn-ui
// Deployment serves them behind Service longhorn-frontend (port 8000,
// backend from LONGHORN_MANAGER_IP).
func uiCommand() *cli.Command {
	return &cli.Command{
		Name:  "ui",
		Usage: "serve the web UI and proxy /v1 to the manager API (the longhorn-ui Deployment)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: ":8000", EnvVars: []string{"LONGHORN_UI_LISTEN"}, Usage: "address to serve on (Longhorn's UI port is 8000)"},
			&cli.StringFlag{Name: "backend", Value: "http://longhorn-backend:9500", EnvVars: []string{"LONGHORN_MANAGER_IP"}, Usage: "the manager REST API the UI uses (/v1 is proxied there)"},
		},
		Action: func(c *cli.Context) error {
			h, err := ui.NewFrontend(ui.FrontendOptions{Backend: c.String("backend")})
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return serveUI(ctx, c.String("listen"), h)
		},
	}
}

// serveUI serves h on addr until ctx ends, then shuts down gracefully.
func serveUI(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	logrus.WithField("address", ln.Addr().String()).Info("serving the web UI")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
