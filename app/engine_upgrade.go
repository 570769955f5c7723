package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/controller"
	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/frontend/nbd"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/rpcmeta"
)

// handOverTimeout bounds each call to the old engine during a live upgrade.
const handOverTimeout = 60 * time.Second

// upgradeFromFlag is `longhorn engine controller --upgrade-from HOST:PORT`:
// a live engine upgrade. Longhorn's controller has --upgrade without a peer
// (its tgt frontend reconnects by itself); ours takes the running engine's
// nbd socket over, so it names that engine.
var upgradeFromFlag = &cli.StringFlag{
	Name: "upgrade-from",
	Usage: "HOST:PORT of the running engine of this volume to take over (live upgrade): the --replica " +
		"processes serve the same data directories; the nbd frontend must be on the same unix socket",
}

func init() {
	engineControllerCmd.Flags = append(engineControllerCmd.Flags, upgradeFromFlag)
}

// frontendSource builds the controller's frontends; a frontend prepared by
// a live upgrade (its socket already taken over) is handed out once.
type frontendSource struct {
	c   *cli.Context
	pre frontend.Frontend
}

func (s *frontendSource) build(name string) (frontend.Frontend, error) {
	if s.pre != nil && s.pre.FrontendName() == name {
		f := s.pre
		s.pre = nil
		return f, nil
	}
	return newFrontend(s.c, name)
}

// upgradeVolume runs the new engine's side of a live upgrade before the
// engine serves gRPC (the instance manager takes a listening gRPC port as
// "ready" and then stops the old engine): take the nbd socket over, have the
// old engine hand the volume over, open the new replicas and serve. On a
// failure after the hand-over, the new replicas are closed again and the
// old engine takes the volume back (VolumeUpgradeAbort).
func upgradeVolume(ctx context.Context, ctl *controller.Controller, fes *frontendSource, opts controller.VolumeOptions,
	replicas []string, from string) error {
	if opts.Frontend != "nbd" {
		return fmt.Errorf("--upgrade-from: live upgrade is not supported yet for frontend %q (only nbd)", opts.Frontend)
	}
	if len(replicas) == 0 {
		return errors.New("--upgrade-from: --replica is required (replica processes on the data directories of the old engine's replicas)")
	}
	conn, err := grpc.NewClient(from, grpc.WithTransportCredentials(insecure.NewCredentials()),
		rpcmeta.ClientIdentity(opts.Name, ""))
	if err != nil {
		return fmt.Errorf("--upgrade-from %s: %w", from, err)
	}
	defer conn.Close()
	old, oldExt := enginerpc.NewControllerServiceClient(conn), enginerpc.NewControllerExtServiceClient(conn)
	f, err := fes.build("nbd")
	if err != nil {
		return err
	}
	srv := f.(*nbd.Server)
	want, err := srv.EndpointFor(opts.Name)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, handOverTimeout)
	v, err := old.VolumeGet(cctx, &emptypb.Empty{})
	cancel()
	if err != nil {
		return fmt.Errorf("--upgrade-from %s: %w", from, err)
	}
	if n := int(v.GetReplicaCount()); n != len(replicas) {
		return fmt.Errorf("--upgrade-from %s: the old engine has %d replicas, --replica names %d", from, n, len(replicas))
	}
	if v.GetEndpoint() != want {
		return fmt.Errorf("--upgrade-from %s: the old engine serves %q, this one would serve %q: same volume and --nbd-listen needed",
			from, v.GetEndpoint(), want)
	}
	t0 := time.Now()
	take, err := srv.PrepareTakeOver(ctx, opts.Name)
	if err != nil {
		return err
	}
	cctx, cancel = context.WithTimeout(ctx, handOverTimeout)
	res, err := oldExt.VolumeUpgradeHandOver(cctx, &enginerpc.VolumeUpgradeHandOverRequest{Endpoint: want,
		NewEngineAddress: fes.c.String("listen"), NewReplicaAddresses: replicas})
	cancel()
	if err != nil {
		if rerr := take.Revert(); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return fmt.Errorf("--upgrade-from %s: hand-over refused: %w", from, err)
	}
	fes.pre = srv
	if err := startHandedOver(ctx, ctl, opts, replicas, res); err != nil {
		return abortUpgrade(ctx, ctl, take, oldExt, replicas, opts.Name, err)
	}
	take.Commit()
	cctx, cancel = context.WithTimeout(ctx, handOverTimeout)
	if _, err := oldExt.VolumeUpgradeDone(cctx, &emptypb.Empty{}); err != nil {
		// The old engine keeps watching the socket, which this engine serves.
		logrus.WithError(err).Warn("engine: live upgrade: the old engine did not take VolumeUpgradeDone")
	}
	cancel()
	logrus.WithFields(logrus.Fields{"volume": opts.Name, "from": from, "oldDrain": time.Duration(res.GetDrainMicroseconds()) * time.Microsecond,
		"pause": time.Since(t0)}).Info("engine: live upgrade: took the volume over")
	return nil
}

// startHandedOver starts the volume on the new replicas, checks it is the
// volume the old engine handed over with every replica RW, and only then
// starts the frontend on the socket taken over.
func startHandedOver(ctx context.Context, ctl *controller.Controller, opts controller.VolumeOptions, replicas []string,
	res *enginerpc.VolumeUpgradeHandOverReply) error {
	if err := ctl.Start(ctx, replicas, res.GetSize(), 0, false); err != nil {
		return fmt.Errorf("start on the new replicas: %w", err)
	}
	if size := ctl.Info().Size; size != res.GetSize() {
		return fmt.Errorf("volume size %d, the old engine had %d", size, res.GetSize())
	}
	for _, r := range ctl.Replicas() {
		if r.Mode != controller.ModeRW {
			return fmt.Errorf("new replica %s is %s: %s", r.Address, r.Mode, r.Error)
		}
	}
	// Only now may clients reach the new replicas: a write acknowledged
	// here must not be lost by an abort.
	if err := ctl.StartFrontend(ctx, opts.Frontend); err != nil {
		return err
	}
	if ctl.Info().FrontendState != controller.FrontendUp {
		return errors.New("frontend did not start")
	}
	return nil
}

// abortUpgrade gives the volume back to the old engine: the socket path to
// its socket, the new replicas closed (their stores must not stay open next
// to the old replicas'), then VolumeUpgradeAbort. It returns cause.
func abortUpgrade(ctx context.Context, ctl *controller.Controller, take *nbd.TakeOver,
	oldExt enginerpc.ControllerExtServiceClient, replicas []string, volume string, cause error) error {
	errs := []error{fmt.Errorf("live upgrade: %w", cause)}
	if err := take.Revert(); err != nil {
		errs = append(errs, err)
	}
	if err := ctl.Shutdown(); err != nil {
		errs = append(errs, err)
	}
	for _, a := range replicas {
		if err := closeReplicaStore(ctx, a, volume); err != nil {
			errs = append(errs, err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, handOverTimeout)
	defer cancel()
	if _, err := oldExt.VolumeUpgradeAbort(cctx, &emptypb.Empty{}); err != nil {
		errs = append(errs, fmt.Errorf("the old engine could not take the volume back: %w", err))
	}
	return errors.Join(errs...)
}

// closeReplicaStore calls ReplicaClose on the replica at addr.
func closeReplicaStore(ctx context.Context, addr, volume string) error {
	host, err := controller.NormalizeAddress(addr)
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(host[len("tcp://"):], grpc.WithTransportCredentials(insecure.NewCredentials()),
		rpcmeta.ClientIdentity(volume, ""))
	if err != nil {
		return err
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(ctx, handOverTimeout)
	defer cancel()
	if _, err := enginerpc.NewReplicaServiceClient(conn).ReplicaClose(cctx, &emptypb.Empty{}); err != nil {
		return fmt.Errorf("close new replica %s: %w", addr, err)
	}
	return nil
}
