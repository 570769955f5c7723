package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/longhorn-go/longhorn/internal/memtrim"
)

// pprofFlag is the --pprof-listen flag of the engine and replica processes:
// Go's net/http/pprof endpoints (goroutines, heap, CPU profile) for
// measuring a running data-plane process (`make bench-scale` reads the
// goroutine count from it). Empty, the default, serves nothing.
var pprofFlag = &cli.StringFlag{Name: "pprof-listen", Usage: "HOST:PORT to serve net/http/pprof on (/debug/pprof/); empty: off"}

func init() {
	engineReplicaCmd.Flags = append(engineReplicaCmd.Flags, pprofFlag)
	engineControllerCmd.Flags = append(engineControllerCmd.Flags, pprofFlag)
}

// servePprof starts the --pprof-listen server, if asked for; it runs until
// the process exits.
func servePprof(c *cli.Context) error {
	addr := c.String(pprofFlag.Name)
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--%s %s: %w", pprofFlag.Name, addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() { _ = http.Serve(ln, mux) }() //nolint:gosec // a local debugging endpoint, off by default
	logrus.WithField("listen", ln.Addr().String()).Info("engine: serving pprof")
	return nil
}

// Trim policy of the data-plane processes (internal/memtrim): once started,
// after trimFirst, then every trimEvery while trimMinKB came back.
const (
	trimFirst = 10 * time.Second
	trimEvery = time.Minute
	trimMinKB = 2048
)

// trimAfterStart gives back what starting the process touched and no
// longer needs (internal/memtrim), and keeps doing so until ctx is done: a
// data-plane process lives as long as its volume, and every volume pays for
// its processes.
func trimAfterStart(ctx context.Context, what string) {
	kb, err := memtrim.Trim()
	if err != nil {
		logrus.WithError(err).Warnf("%s: memory trim after start failed", what)
		return
	}
	logrus.Debugf("%s: dropped %d KiB of start-up pages", what, kb)
	go memtrim.Keep(ctx, trimFirst, trimEvery, trimMinKB)
}
