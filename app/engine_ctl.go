package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/controller"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
)

// engineCtlCmd is the operator CLI of a running engine (its gRPC API).
var engineCtlCmd = &cli.Command{
	Name:  "ctl",
	Usage: "operate a running engine through its gRPC API",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "url", Value: "localhost:9501", EnvVars: []string{"LONGHORN_ENGINE_URL"}, Usage: "engine gRPC HOST:PORT"},
		&cli.BoolFlag{Name: "json", Usage: "print JSON instead of text"},
		&cli.DurationFlag{Name: "timeout", Value: time.Minute, Usage: "deadline of each call"},
	},
	Subcommands: []*cli.Command{
		{Name: "info", Usage: "show the volume", Action: ctlAction(ctlInfo)},
		{Name: "ls-replica", Usage: "list replicas and their modes", Action: ctlAction(ctlListReplicas)},
		{Name: "add-replica", Usage: "rebuild a replica into the volume", ArgsUsage: "tcp://HOST:P",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "fast-sync", Usage: "skip ranges whose checksums already match"},
				&cli.StringFlag{Name: "replica-instance-name", Usage: "expected instance name of the replica"},
				&cli.BoolFlag{Name: "wait", Usage: "wait until the rebuild finished"},
				&cli.Int64Flag{Name: "replica-rebuilding-bandwidth-limit", Usage: "MB/s (2^20 bytes) the rebuild writes at most, 0 = no limit"},
			},
			Action: ctlAction(ctlAddReplica)},
		{Name: "rm-replica", Usage: "remove a replica from the volume", ArgsUsage: "tcp://HOST:P", Action: ctlAction(ctlRemoveReplica)},
		{Name: "rebuild-status", Usage: "show rebuild progress", Action: ctlAction(ctlRebuildStatus)},
		{Name: "expand", Usage: "grow the volume", Flags: []cli.Flag{
			&cli.StringFlag{Name: "size", Required: true, Usage: "new size in bytes (or 20Gi)"},
			&cli.BoolFlag{Name: "wait", Usage: "wait until the expansion finished"},
		}, Action: ctlAction(ctlExpand)},
		{Name: "frontend", Usage: "start or shut down the frontend", Subcommands: []*cli.Command{
			{Name: "start", ArgsUsage: "nbd|iscsi", Action: ctlAction(ctlFrontendStart)},
			{Name: "shutdown", Action: ctlAction(ctlFrontendShutdown)},
		}},
		{Name: "snapshot", Usage: "snapshot operations", Subcommands: []*cli.Command{
			{Name: "create", ArgsUsage: "[NAME]", Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "label", Usage: "KEY=VALUE (repeatable)"},
			}, Action: ctlAction(ctlSnapshotCreate)},
			{Name: "ls", Usage: "list snapshots, newest first (not those marked removed)", Action: ctlAction(ctlSnapshotList)},
			{Name: "info", Usage: "show every layer", Action: ctlAction(ctlSnapshotInfo)},
			{Name: "rm", ArgsUsage: "NAME...", Usage: "mark snapshots removed (purge deletes them)", Action: ctlAction(ctlSnapshotRemove)},
			{Name: "revert", ArgsUsage: "NAME", Usage: "revert to a snapshot (frontend must be down)", Action: ctlAction(ctlSnapshotRevert)},
			{Name: "purge", Flags: []cli.Flag{
				&cli.BoolFlag{Name: "skip-if-in-progress"},
				&cli.BoolFlag{Name: "wait", Usage: "wait until every replica finished"},
			}, Action: ctlAction(ctlSnapshotPurge)},
			{Name: "purge-status", Action: ctlAction(ctlPurgeStatus)},
		}},
	},
}

var empty = &emptypb.Empty{}

// ctlEnv is what a ctl subcommand runs with.
type ctlEnv struct {
	c    *cli.Context
	ctx  context.Context
	api  enginerpc.ControllerServiceClient
	ext  enginerpc.ControllerExtServiceClient
	out  io.Writer
	json bool
}

func ctlAction(fn func(e *ctlEnv) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		url := c.String("url")
		conn, err := grpc.NewClient(url, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return fmt.Errorf("--url %s: %w", url, err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
		defer cancel()
		return fn(&ctlEnv{c: c, ctx: ctx, api: enginerpc.NewControllerServiceClient(conn),
			ext: enginerpc.NewControllerExtServiceClient(conn), out: c.App.Writer, json: c.Bool("json")})
	}
}

func (e *ctlEnv) printJSON(m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(e.out, string(b))
	return err
}

func (e *ctlEnv) arg(what string) (string, error) {
	if e.c.NArg() != 1 {
		return "", fmt.Errorf("want exactly one argument %s, got %d", what, e.c.NArg())
	}
	return e.c.Args().First(), nil
}

func ctlInfo(e *ctlEnv) error {
	v, err := e.api.VolumeGet(e.ctx, empty)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(v)
	}
	w := tabwriter.NewWriter(e.out, 0, 4, 1, ' ', 0)
	fmt.Fprintf(w, "name:\t%s\nstate:\t%s\nsize:\t%d\nreplicas:\t%d\nfrontend:\t%s (%s)\nendpoint:\t%s\n",
		v.GetName(), v.GetState(), v.GetSize(), v.GetReplicaCount(), v.GetFrontend(), v.GetFrontendState(), v.GetEndpoint())
	fmt.Fprintf(w, "expanding:\t%v\n", v.GetIsExpanding())
	if v.GetLastExpansionError() != "" {
		fmt.Fprintf(w, "last expansion error:\t%s (%s)\n", v.GetLastExpansionError(), v.GetLastExpansionFailedAt())
	}
	fmt.Fprintf(w, "snapshot max count:\t%d\nsnapshot max size:\t%d\nunmap marks snapshot chain removed:\t%v\n",
		v.GetSnapshotMaxCount(), v.GetSnapshotMaxSize(), v.GetUnmapMarkSnapChainRemoved())
	return w.Flush()
}

func ctlListReplicas(e *ctlEnv) error {
	l, err := e.api.ReplicaList(e.ctx, empty)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(l)
	}
	w := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ADDRESS\tMODE\tINSTANCE")
	for _, r := range l.GetReplicas() {
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.GetAddress().GetAddress(), r.GetMode(), r.GetAddress().GetInstanceName())
	}
	return w.Flush()
}

func ctlAddReplica(e *ctlEnv) error {
	addr, err := e.arg("tcp://HOST:P")
	if err != nil {
		return err
	}
	addr, err = controller.NormalizeAddress(addr)
	if err != nil {
		return err
	}
	if _, err := e.ext.ReplicaAdd(e.ctx, &enginerpc.ReplicaAddRequest{Address: addr,
		InstanceName: e.c.String("replica-instance-name"), FastSync: e.c.Bool("fast-sync"),
		ReplicaRebuildingBandwidthLimit: e.c.Int64("replica-rebuilding-bandwidth-limit")}); err != nil {
		return err
	}
	if !e.c.Bool("wait") {
		fmt.Fprintf(e.out, "rebuild of %s started\n", addr)
		return nil
	}
	for {
		st, err := e.ext.ReplicaRebuildingStatus(e.ctx, empty)
		if err != nil {
			return err
		}
		if s, ok := st.GetStatus()[addr]; ok && s.GetState() == controller.RebuildError {
			return fmt.Errorf("rebuild of %s failed: %s", addr, s.GetError())
		}
		r, err := e.api.ReplicaGet(e.ctx, &enginerpc.ReplicaAddress{Address: addr})
		if err != nil {
			return err
		}
		switch r.GetMode() {
		case enginerpc.ReplicaMode_RW:
			fmt.Fprintf(e.out, "rebuild of %s complete\n", addr)
			return nil
		case enginerpc.ReplicaMode_ERR:
			return fmt.Errorf("rebuild of %s failed: the replica is ERR", addr)
		}
		if err := sleepCtx(e.ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func ctlRemoveReplica(e *ctlEnv) error {
	addr, err := e.arg("tcp://HOST:P")
	if err != nil {
		return err
	}
	_, err = e.api.ReplicaDelete(e.ctx, &enginerpc.ReplicaAddress{Address: addr})
	return err
}

func ctlRebuildStatus(e *ctlEnv) error {
	st, err := e.ext.ReplicaRebuildingStatus(e.ctx, empty)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(st)
	}
	w := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "REPLICA\tSTATE\tPROGRESS\tFROM\tERROR")
	for _, addr := range sortedKeys(st.GetStatus()) {
		s := st.GetStatus()[addr]
		fmt.Fprintf(w, "%s\t%s\t%d%%\t%s\t%s\n", addr, s.GetState(), s.GetProgress(), s.GetFromReplicaAddress(), s.GetError())
	}
	return w.Flush()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ctlExpand(e *ctlEnv) error {
	size, err := parseSize("size", e.c.String("size"))
	if err != nil {
		return err
	}
	if _, err := e.api.VolumeExpand(e.ctx, &enginerpc.VolumeExpandRequest{Size: size}); err != nil {
		return err
	}
	for e.c.Bool("wait") {
		v, err := e.api.VolumeGet(e.ctx, empty)
		if err != nil {
			return err
		}
		if !v.GetIsExpanding() {
			if v.GetLastExpansionError() != "" {
				return fmt.Errorf("expansion: %s", v.GetLastExpansionError())
			}
			break
		}
		if err := sleepCtx(e.ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

func ctlFrontendStart(e *ctlEnv) error {
	name, err := e.arg("FRONTEND")
	if err != nil {
		return err
	}
	v, err := e.api.VolumeFrontendStart(e.ctx, &enginerpc.VolumeFrontendStartRequest{Frontend: name})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.out, v.GetEndpoint())
	return nil
}

func ctlFrontendShutdown(e *ctlEnv) error {
	_, err := e.api.VolumeFrontendShutdown(e.ctx, empty)
	return err
}

func ctlSnapshotCreate(e *ctlEnv) error {
	if e.c.NArg() > 1 {
		return fmt.Errorf("want at most one argument NAME, got %d", e.c.NArg())
	}
	labels := map[string]string{}
	for _, kv := range e.c.StringSlice("label") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--label %q: want KEY=VALUE", kv)
		}
		labels[k] = v
	}
	r, err := e.api.VolumeSnapshot(e.ctx, &enginerpc.VolumeSnapshotRequest{Name: e.c.Args().First(), Labels: labels})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.out, r.GetName())
	return nil
}

// chainOrder lists snapshot names from the head's parent down to the oldest,
// then any snapshots off that chain, sorted; with visible only, snapshots
// marked removed are left out (Longhorn's `snapshot ls`, whose chain skips
// removed disks; `snapshot info` shows them with removed: true).
func chainOrder(snaps map[string]*enginerpc.Snapshot, visible bool) []string {
	var out []string
	seen := map[string]bool{}
	for cur := snaps[controller.HeadName].GetParent(); cur != "" && !seen[cur]; cur = snaps[cur].GetParent() {
		seen[cur] = true
		if !visible || !snaps[cur].GetRemoved() {
			out = append(out, cur)
		}
	}
	for _, n := range sortedKeys(snaps) {
		if !seen[n] && n != controller.HeadName && (!visible || !snaps[n].GetRemoved()) {
			out = append(out, n)
		}
	}
	return out
}

func ctlSnapshotList(e *ctlEnv) error {
	l, err := e.ext.SnapshotList(e.ctx, empty)
	if err != nil {
		return err
	}
	names := chainOrder(l.GetSnapshots(), true)
	if e.json {
		b, err := json.MarshalIndent(names, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(e.out, string(b))
		return err
	}
	fmt.Fprintln(e.out, "ID")
	for _, n := range names {
		fmt.Fprintln(e.out, n)
	}
	return nil
}

func ctlSnapshotInfo(e *ctlEnv) error {
	l, err := e.ext.SnapshotList(e.ctx, empty)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(l)
	}
	w := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tPARENT\tCREATED\tSIZE\tUSER\tREMOVED\tLABELS")
	for _, n := range append([]string{controller.HeadName}, chainOrder(l.GetSnapshots(), false)...) {
		s := l.GetSnapshots()[n]
		if s == nil {
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%v\t%v\t%v\n", n, s.GetParent(), s.GetCreated(), s.GetSize(),
			s.GetUsercreated(), s.GetRemoved(), s.GetLabels())
	}
	return w.Flush()
}

func ctlSnapshotRemove(e *ctlEnv) error {
	if e.c.NArg() == 0 {
		return fmt.Errorf("want one or more snapshot names")
	}
	_, err := e.ext.SnapshotRemove(e.ctx, &enginerpc.SnapshotRemoveRequest{Names: e.c.Args().Slice()})
	return err
}

func ctlSnapshotRevert(e *ctlEnv) error {
	name, err := e.arg("NAME")
	if err != nil {
		return err
	}
	_, err = e.api.VolumeRevert(e.ctx, &enginerpc.VolumeRevertRequest{Name: name})
	return err
}

func ctlSnapshotPurge(e *ctlEnv) error {
	if _, err := e.ext.SnapshotPurge(e.ctx, &enginerpc.SnapshotPurgeRequest{SkipIfInProgress: e.c.Bool("skip-if-in-progress")}); err != nil {
		return err
	}
	for e.c.Bool("wait") {
		st, err := e.ext.SnapshotPurgeStatus(e.ctx, empty)
		if err != nil {
			return err
		}
		busy := false
		for addr, s := range st.GetStatus() {
			if s.GetError() != "" {
				return fmt.Errorf("purge on %s: %s", addr, s.GetError())
			}
			busy = busy || s.GetIsPurging()
		}
		if !busy {
			break
		}
		if err := sleepCtx(e.ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

func ctlPurgeStatus(e *ctlEnv) error {
	st, err := e.ext.SnapshotPurgeStatus(e.ctx, empty)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(st)
	}
	w := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "REPLICA\tSTATE\tPROGRESS\tERROR")
	for _, addr := range sortedKeys(st.GetStatus()) {
		s := st.GetStatus()[addr]
		fmt.Fprintf(w, "%s\t%s\t%d%%\t%s\n", addr, s.GetState(), s.GetProgress(), s.GetError())
	}
	return w.Flush()
}
