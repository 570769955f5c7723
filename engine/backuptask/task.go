// Package backuptask drives a volume's backups and restores from outside the
// engine, as Longhorn's pkg/sync Task does for the instance manager's proxy:
// it asks the engine for its replicas (ControllerService.ReplicaList) and
// talks to their sync agents (SyncAgentService on each replica's P+2).
//
//   - CreateBackup runs on the first RW replica;
//   - BackupStatus asks that replica (or every RW replica);
//   - RestoreBackup restores into every replica that is not ERR, into the
//     same snapshot disk: the one a previous restore used (an incremental
//     restore, as DR volumes do), or a new volume-snap-<uuid>.img;
//   - RestoreStatus reports every replica's restore.
package backuptask

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/rpcmeta"
	"github.com/longhorn-go/longhorn/engine/syncagent"
)

// AgentDialer returns a connection to the sync agent at HOST:P+2 (it serves
// Longhorn's SyncAgentService and lhext.SyncAgentExtService) and a function
// that releases it.
type AgentDialer func(agentAddr string) (grpc.ClientConnInterface, func(), error)

// DialAgent is the default AgentDialer: a plain gRPC connection per call.
func DialAgent(addr string) (grpc.ClientConnInterface, func(), error) {
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return cc, func() { _ = cc.Close() }, nil
}

// Task is one volume's engine and its replicas.
type Task struct {
	Controller enginerpc.ControllerServiceClient
	Dial       AgentDialer // nil = DialAgent
}

// ErrNoReplica says no replica can take the operation.
var ErrNoReplica = errors.New("no usable replica")

// AgentAddress returns the sync agent address (HOST:P+2) of a replica address (tcp://HOST:P).
func AgentAddress(replica string) (string, error) {
	host, port, err := syncagent.ParseReplicaAddress(replica)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(port+2)), nil
}

func (t *Task) conn(replica string) (grpc.ClientConnInterface, func(), error) {
	addr, err := AgentAddress(replica)
	if err != nil {
		return nil, nil, err
	}
	dial := t.Dial
	if dial == nil {
		dial = DialAgent
	}
	return dial(addr)
}

func (t *Task) agent(replica string) (enginerpc.SyncAgentServiceClient, func(), error) {
	cc, release, err := t.conn(replica)
	if err != nil {
		return nil, nil, err
	}
	return enginerpc.NewSyncAgentServiceClient(cc), release, nil
}

// agentContext drops the engine's instance-name from the outgoing metadata
// (the instance manager's proxy adds it for the engine): a replica's sync
// agent would refuse a call naming another instance. The volume-name stays,
// so a replica of another volume still refuses.
func agentContext(ctx context.Context) context.Context {
	md, ok := metadata.FromOutgoingContext(ctx)
	if !ok || len(md.Get(rpcmeta.InstanceNameKey)) == 0 {
		return ctx
	}
	md = md.Copy()
	md.Delete(rpcmeta.InstanceNameKey)
	return metadata.NewOutgoingContext(ctx, md)
}

// replicas returns the engine's replicas in the given modes, in engine order.
func (t *Task) replicas(ctx context.Context, modes ...enginerpc.ReplicaMode) ([]string, error) {
	r, err := t.Controller.ReplicaList(ctx, &emptypb.Empty{})
	if err != nil {
		return nil, fmt.Errorf("engine replica list: %w", err)
	}
	var out []string
	for _, rep := range r.GetReplicas() {
		for _, m := range modes {
			if rep.GetMode() == m {
				out = append(out, rep.GetAddress().GetAddress())
			}
		}
	}
	return out, nil
}

// CreateRequest is a backup to take (the sync agent's BackupCreateRequest
// without the replica choice).
type CreateRequest = enginerpc.BackupCreateRequest

// CreateResult says which backup started where.
type CreateResult struct {
	BackupName     string
	ReplicaAddress string
	IsIncremental  bool
}

// CreateBackup starts the backup on the first RW replica.
func (t *Task) CreateBackup(ctx context.Context, req *CreateRequest) (CreateResult, error) {
	rw, err := t.replicas(ctx, enginerpc.ReplicaMode_RW)
	if err != nil {
		return CreateResult{}, err
	}
	if len(rw) == 0 {
		return CreateResult{}, status.Errorf(codes.FailedPrecondition, "%v: the volume has no RW replica to back up from", ErrNoReplica)
	}
	c, release, err := t.agent(rw[0])
	if err != nil {
		return CreateResult{}, err
	}
	defer release()
	res, err := c.BackupCreate(agentContext(ctx), req)
	if err != nil {
		return CreateResult{}, replicaErr(rw[0], err)
	}
	return CreateResult{BackupName: res.GetBackup(), ReplicaAddress: rw[0], IsIncremental: res.GetIsIncremental()}, nil
}

// BackupStatus returns a backup's status from replica (or, when replica is
// "", from the first RW replica that knows it) and the replica that answered.
func (t *Task) BackupStatus(ctx context.Context, backup, replica string) (*enginerpc.BackupStatusResponse, string, error) {
	candidates := []string{replica}
	if replica == "" {
		var err error
		if candidates, err = t.replicas(ctx, enginerpc.ReplicaMode_RW); err != nil {
			return nil, "", err
		}
	}
	var last error = status.Errorf(codes.NotFound, "backup %s: no replica reports it", backup)
	for _, r := range candidates {
		c, release, err := t.agent(r)
		if err != nil {
			return nil, "", err
		}
		st, err := c.BackupStatus(agentContext(ctx), &enginerpc.BackupStatusRequest{Backup: backup})
		release()
		if err == nil {
			return st, r, nil
		}
		last = replicaErr(r, err)
	}
	return nil, "", last
}

// CancelBackup stops a running backup on replica (or, when replica is "",
// on the RW replica that reports it) through the agent's
// lhext.SyncAgentExtService.BackupCancel. The agent's code comes back:
// NotFound when no replica knows the backup, Unimplemented from a replica
// that cannot cancel (Longhorn's: its backup runs to the end).
func (t *Task) CancelBackup(ctx context.Context, backup, replica string) error {
	if replica == "" {
		_, from, err := t.BackupStatus(ctx, backup, "")
		if err != nil {
			return err
		}
		replica = from
	}
	cc, release, err := t.conn(replica)
	if err != nil {
		return err
	}
	defer release()
	_, err = enginerpc.NewSyncAgentExtServiceClient(cc).BackupCancel(agentContext(ctx), &enginerpc.BackupCancelRequest{Backup: backup})
	if err != nil {
		return replicaErr(replica, err)
	}
	return nil
}

// RestoreBackup starts restoring backupURL into every replica that is not
// ERR (credential and concurrentLimit as BackupRestoreRequest's).
func (t *Task) RestoreBackup(ctx context.Context, backupURL string, credential map[string]string, concurrentLimit int32) error {
	reps, err := t.replicas(ctx, enginerpc.ReplicaMode_RW, enginerpc.ReplicaMode_WO)
	if err != nil {
		return err
	}
	if len(reps) == 0 {
		return status.Errorf(codes.FailedPrecondition, "%v: the volume has no replica to restore into", ErrNoReplica)
	}
	sts, err := t.RestoreStatus(ctx)
	if err != nil {
		return err
	}
	disk := restoreDisk(sts)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := t.restoreOne(ctx, r, backupURL, disk, credential, concurrentLimit); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return joinStatus(errs)
}

func (t *Task) restoreOne(ctx context.Context, r, backupURL, disk string, cred map[string]string, limit int32) error {
	c, release, err := t.agent(r)
	if err != nil {
		return err
	}
	defer release()
	_, err = c.BackupRestore(agentContext(ctx), &enginerpc.BackupRestoreRequest{Backup: backupURL, SnapshotDiskName: disk,
		Credential: cred, ConcurrentLimit: limit})
	if err != nil {
		return replicaErr(r, err)
	}
	return nil
}

// restoreDisk returns the snapshot disk a previous restore left on the
// replicas (so the next restore is incremental), or a new one.
func restoreDisk(sts map[string]*enginerpc.RestoreStatusResponse) string {
	var addrs []string
	for a := range sts {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		if st := sts[a]; st.GetDestFileName() != "" {
			return st.GetDestFileName()
		}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return "volume-snap-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32] + ".img"
}

// RestoreStatus returns every non-ERR replica's restore status by address.
func (t *Task) RestoreStatus(ctx context.Context) (map[string]*enginerpc.RestoreStatusResponse, error) {
	reps, err := t.replicas(ctx, enginerpc.ReplicaMode_RW, enginerpc.ReplicaMode_WO)
	if err != nil {
		return nil, err
	}
	out := map[string]*enginerpc.RestoreStatusResponse{}
	for _, r := range reps {
		c, release, err := t.agent(r)
		if err != nil {
			return nil, err
		}
		st, err := c.RestoreStatus(agentContext(ctx), &emptypb.Empty{})
		release()
		if err != nil {
			return nil, replicaErr(r, err)
		}
		out[r] = st
	}
	return out, nil
}

// replicaErr keeps the agent's code and names the replica.
func replicaErr(replica string, err error) error {
	st, _ := status.FromError(err)
	return status.Errorf(st.Code(), "replica %s: %s", replica, st.Message())
}

// joinStatus folds per-replica errors into one, keeping the first code.
func joinStatus(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = status.Convert(e).Message()
	}
	return status.Error(status.Code(errs[0]), strings.Join(msgs, "; "))
}
