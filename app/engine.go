package app

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
	"google.golang.org/grpc"

	"github.com/longhorn-go/longhorn/engine/controller"
	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/replicasrv"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/rpcmeta"
)

// `longhorn engine replica|controller|ctl`: the v1 data plane processes and
// their operator CLI (Longhorn's `longhorn replica`, `longhorn controller` and
// the engine client commands).
func init() {
	registerCommand(&cli.Command{
		Name:        "engine",
		Usage:       "v1 data plane: replica and engine (controller) processes, and a CLI for a running engine",
		Subcommands: []*cli.Command{interspersed(engineReplicaCmd), interspersed(engineControllerCmd), engineCtlCmd},
	})
}

// parseSize reads a byte count: a plain number, or one with a binary suffix
// (k, m, g, t, with optional "i" and "b": 10g, 10Gi, 10GiB).
func parseSize(flag, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "b"), "i")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("--%s %q: want a byte count such as 1073741824 or 1Gi", flag, s)
	}
	return v * mult, nil
}

func sizeFlag(c *cli.Context, name string) (int64, error) { return parseSize(name, c.String(name)) }

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

var engineReplicaCmd = &cli.Command{
	Name:      "replica",
	Usage:     "serve one replica directory (gRPC on P, data on P+1, sync agent on P+2, transfers on P+3..P+9)",
	ArgsUsage: "DIR",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "size", Usage: "volume size in bytes (or 10Gi); creates the replica when DIR holds none"},
		&cli.StringFlag{Name: "listen", Value: "localhost:9502", Usage: "HOST:P, the first of 10 consecutive ports"},
		&cli.BoolFlag{Name: "disable-revision-counter", Aliases: []string{"disableRevCounter"}, Usage: "do not maintain revision.counter"},
		&cli.StringFlag{Name: "replica-instance-name", Usage: "instance name reported to the engine"},
		&cli.StringFlag{Name: "volume-name", Usage: "volume name (used in expansion snapshot names)"},
		&cli.IntFlag{Name: "snapshot-max-count", Value: replica.DefaultSnapshotMaxCount, Usage: "snapshot-max-count (2..250)"},
		&cli.StringFlag{Name: "snapshot-max-size", Value: "0", Usage: "snapshot-max-size in bytes, 0 = no limit"},
		&cli.BoolFlag{Name: "unmap-mark-snap-chain-removed", Usage: "unmap also marks the snapshot chain under the head removed"},
		&cli.StringFlag{Name: "backing-file", Usage: "raw backing image used as the bottom layer"},
		&cli.BoolFlag{Name: "disable-direct-read", Usage: "do not let engines on this node read the replica's files themselves (for replicas with resource limits)"},
	},
	Action: runReplica,
}

func runReplica(c *cli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("engine replica: want exactly one argument DIR, got %d", c.NArg())
	}
	size, err := sizeFlag(c, "size")
	if err != nil {
		return err
	}
	maxSize, err := sizeFlag(c, "snapshot-max-size")
	if err != nil {
		return err
	}
	cfg := replicasrv.Config{
		Dir: c.Args().First(), Size: size, Listen: c.String("listen"), InstanceName: c.String("replica-instance-name"),
		DisableDirectRead: c.Bool("disable-direct-read"),
		Options: replica.Options{
			DisableRevisionCounter: c.Bool("disable-revision-counter"), SnapshotMaxCount: c.Int("snapshot-max-count"),
			SnapshotMaxSize: maxSize, UnmapMarkSnapChainRemoved: c.Bool("unmap-mark-snap-chain-removed"),
			BackingFile: c.String("backing-file"), VolumeName: c.String("volume-name"),
		},
	}
	ctx, stop := signalContext()
	defer stop()
	if err := servePprof(c); err != nil {
		return err
	}
	pr, err := replicasrv.Start(cfg, logrus.StandardLogger())
	if err != nil {
		return err
	}
	trimAfterStart(ctx, "replica")
	return pr.Wait(ctx)
}

// engineControllerCmd is a variable so that registerFrontend can add each
// frontend's flags to it (frontends register from their own init functions).
var engineControllerCmd = &cli.Command{
	Name:      "controller",
	Usage:     "run the engine of one volume: replicate to the replicas and serve a frontend",
	ArgsUsage: "VOLUME",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "size", Usage: "volume size in bytes (or 10Gi); 0 takes the replicas' size"},
		&cli.StringFlag{Name: "current-size", Usage: "size before an interrupted expansion, bytes"},
		&cli.StringFlag{Name: "frontend", Usage: `frontend to start: nbd, iscsi or "" (maintenance mode)`},
		&cli.StringSliceFlag{Name: "replica", Usage: "replica address tcp://HOST:P (repeat for each replica)"},
		&cli.StringFlag{Name: "listen", Value: "localhost:9501", Usage: "HOST:PORT of the engine gRPC API"},
		&cli.IntFlag{Name: "engine-replica-timeout", Value: 8, Usage: "seconds without an answer before a replica is failed"},
		&cli.BoolFlag{Name: "disable-revision-counter", Aliases: []string{"disableRevCounter"}, Usage: "replicas keep no revision counter"},
		&cli.BoolFlag{Name: "salvage-requested", Aliases: []string{"salvageRequested"}, Usage: "pick the best replica by head mtime and size"},
		&cli.BoolFlag{Name: "unmap-mark-snap-chain-removed", Usage: "unmap also marks the snapshot chain under the head removed"},
		&cli.IntFlag{Name: "snapshot-max-count", Value: 250, Usage: "snapshot-max-count (2..250)"},
		&cli.StringFlag{Name: "snapshot-max-size", Value: "0", Usage: "snapshot-max-size in bytes, 0 = no limit"},
		&cli.IntFlag{Name: "rebuild-sync-concurrent-limit", Value: 1, Usage: "rebuild concurrent sync limit (1..5)"},
		&cli.IntFlag{Name: "file-sync-http-client-timeout", Value: 30, Usage: "seconds per rebuild transfer request"},
		&cli.IntFlag{Name: "data-connections", Value: 2, Usage: "data connections per replica"},
		&cli.StringFlag{Name: "engine-instance-name", Usage: "engine instance name; calls naming another instance are refused"},
	},
	Action: runController,
}

func controllerOptions(c *cli.Context) (controller.VolumeOptions, error) {
	if c.NArg() != 1 {
		return controller.VolumeOptions{}, fmt.Errorf("engine controller: want exactly one argument VOLUME, got %d", c.NArg())
	}
	size, err := sizeFlag(c, "size")
	if err != nil {
		return controller.VolumeOptions{}, err
	}
	cur, err := sizeFlag(c, "current-size")
	if err != nil {
		return controller.VolumeOptions{}, err
	}
	maxSize, err := sizeFlag(c, "snapshot-max-size")
	if err != nil {
		return controller.VolumeOptions{}, err
	}
	if t := c.Int("engine-replica-timeout"); t < 1 || t > 30 {
		return controller.VolumeOptions{}, fmt.Errorf("--engine-replica-timeout %d: want 1..30 seconds", t)
	}
	return controller.VolumeOptions{
		Name: c.Args().First(), Size: size, CurrentSize: cur,
		EngineReplicaTimeout:      time.Duration(c.Int("engine-replica-timeout")) * time.Second,
		DisableRevisionCounter:    c.Bool("disable-revision-counter"),
		SalvageRequested:          c.Bool("salvage-requested"),
		UnmapMarkSnapChainRemoved: c.Bool("unmap-mark-snap-chain-removed"),
		SnapshotMaxCount:          c.Int("snapshot-max-count"), SnapshotMaxSize: maxSize,
		RebuildConcurrentSyncLimit: c.Int("rebuild-sync-concurrent-limit"),
		FileSyncHTTPClientTimeout:  c.Int("file-sync-http-client-timeout"),
		DataConns:                  c.Int("data-connections"),
		Frontend:                   c.String("frontend"),
		NewFrontend:                func(name string) (frontend.Frontend, error) { return newFrontend(c, name) },
		Log:                        logrus.StandardLogger(),
	}, nil
}

func runController(c *cli.Context) error {
	opts, err := controllerOptions(c)
	if err != nil {
		return err
	}
	if fe := opts.Frontend; fe != "" {
		if _, ok := frontendFactories[fe]; !ok {
			return fmt.Errorf("--frontend %q: unknown, want one of %v or empty", fe, frontendNames())
		}
	}
	fes := &frontendSource{c: c}
	opts.NewFrontend = fes.build
	from := c.String("upgrade-from")
	volOpts := opts
	if from != "" {
		volOpts.Frontend = "" // upgradeVolume starts it once the new replicas are verified
	}
	ctl, err := controller.NewVolume(volOpts)
	if err != nil {
		return err
	}
	if err := servePprof(c); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	// Before gRPC listens, as Longhorn's engine starts its controller: a
	// listening port tells the instance manager this engine is ready. For a
	// live upgrade the instance manager then stops the old engine; for a
	// start the manager's first poll then finds the frontend's endpoint
	// (listening first made an attach wait one poll interval, 2 s, for it:
	// bench-scale part 3's slowest attaches).
	if from != "" {
		if err := upgradeVolume(ctx, ctl, fes, opts, c.StringSlice("replica"), from); err != nil {
			_ = ctl.Shutdown()
			return err
		}
	} else if err := startVolume(ctx, ctl, c.StringSlice("replica"), opts); err != nil {
		_ = ctl.Shutdown()
		return err
	}
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		_ = ctl.Shutdown()
		return fmt.Errorf("--listen %s: %w", c.String("listen"), err)
	}
	gs := grpc.NewServer(grpc.UnaryInterceptor(rpcmeta.IdentityInterceptor(opts.Name, c.String("engine-instance-name"), "controller")))
	enginerpc.RegisterControllerServiceServer(gs, controller.NewServer(ctl))
	enginerpc.RegisterControllerExtServiceServer(gs, controller.NewExtServer(ctl))
	rpcmeta.RegisterHealth(gs)
	rpcmeta.RegisterReflection(gs)
	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(ln) }()
	logrus.WithFields(logrus.Fields{"volume": opts.Name, "listen": ln.Addr().String()}).Info("engine: serving")
	trimAfterStart(ctx, "engine")
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	logrus.WithField("volume", opts.Name).Info("engine: shutting down")
	gs.Stop()
	if serr := ctl.Shutdown(); err == nil {
		err = serr
	}
	return err
}

func startVolume(ctx context.Context, ctl *controller.Controller, replicas []string, opts controller.VolumeOptions) error {
	if len(replicas) == 0 {
		return nil
	}
	if err := ctl.Start(ctx, replicas, opts.Size, opts.CurrentSize, opts.SalvageRequested); err != nil {
		return fmt.Errorf("start volume %s: %w", opts.Name, err)
	}
	return nil
}

// interspersed lets a command take flags after its positional arguments, as
// Longhorn's command lines do (`controller VOLUME --size N ...`): urfave/cli v2
// stops at the first positional argument. The command skips the framework's
// flag parsing; its action moves the flags in front of the positional
// arguments (using the command's flag definitions to know which flags take a
// value) and parses them with an inner app.
func interspersed(cmd *cli.Command) *cli.Command {
	action := cmd.Action
	cmd.SkipFlagParsing = true
	cmd.Action = func(c *cli.Context) error {
		flags, pos, err := reorderArgs(cmd.Flags, c.Args().Slice())
		if err != nil {
			return fmt.Errorf("%s: %w", cmd.FullName(), err)
		}
		inner := &cli.App{
			Name: cmd.FullName(), Usage: cmd.Usage, ArgsUsage: cmd.ArgsUsage, Flags: cmd.Flags, Action: action,
			Writer: c.App.Writer, ErrWriter: c.App.ErrWriter, HideHelpCommand: true,
			Description: cmd.Description,
		}
		args := append([]string{cmd.FullName()}, flags...)
		if len(pos) > 0 {
			args = append(append(args, "--"), pos...)
		}
		return inner.RunContext(c.Context, args)
	}
	return cmd
}

// reorderArgs splits args into flags (with their values) and positional
// arguments. "--" ends the flags.
func reorderArgs(defs []cli.Flag, args []string) (flags, pos []string, err error) {
	takesValue := map[string]bool{}
	for _, f := range defs {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	takesValue["help"], takesValue["h"] = false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(pos, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		v, known := takesValue[name]
		if !known {
			return nil, nil, fmt.Errorf("flag provided but not defined: %s", a)
		}
		if v {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("flag %s needs a value", a)
			}
			i++
			flags = append(flags, args[i])
		}
	}
	return flags, pos, nil
}
