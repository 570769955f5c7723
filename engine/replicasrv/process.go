package replicasrv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"

	"github.com/longhorn-go/longhorn/engine/dataconn"
	"github.com/longhorn-go/longhorn/engine/replica"
	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/rpcmeta"
	"github.com/longhorn-go/longhorn/engine/syncagent"
)

// PortCount is the number of consecutive ports a replica process uses
// (Longhorn's DefaultReplicaPortCountV1).
const PortCount = 10

// Config is the command line of a replica process.
type Config struct {
	Dir          string
	Size         int64  // bytes; 0 = open an existing replica only
	Listen       string // HOST:P, the first of PortCount ports
	InstanceName string
	Options      replica.Options
	// HashLockPath is the node-wide snapshot hashing lock ("" = the default,
	// syncagent.DefaultHashLockPath).
	HashLockPath string
	// DisableDirectRead stops offering direct reads to engines on this node
	// (dataconn.ExtensionDirectRead): set for a replica with resource
	// limits, which hold only for the reads it makes itself.
	DisableDirectRead bool
}

// SplitListen parses HOST:P and checks that P..P+9 are valid ports.
func SplitListen(listen string) (string, int, error) {
	host, ps, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("--listen %q: %w (want HOST:PORT)", listen, err)
	}
	p, err := strconv.Atoi(ps)
	if err != nil || p <= 0 || p+PortCount-1 > 65535 {
		return "", 0, fmt.Errorf("--listen %q: port must be 1..%d (the replica uses %d ports from it)", listen, 65535-PortCount+1, PortCount)
	}
	return host, p, nil
}

// Process is a running replica process.
type Process struct {
	Server *Server
	agent  *syncagent.Agent
	ctl    *grpc.Server
	sync   *grpc.Server
	data   *dataconn.Server
	errc   chan error
	log    logrus.FieldLogger
}

// Start opens the replica and starts serving on P, P+1 and P+2.
func Start(cfg Config, log logrus.FieldLogger) (*Process, error) {
	if log == nil {
		log = logrus.StandardLogger()
	}
	host, p, err := SplitListen(cfg.Listen)
	if err != nil {
		return nil, err
	}
	srv, err := NewServer(cfg.Dir, cfg.Size, cfg.Options, cfg.InstanceName, log)
	if err != nil {
		return nil, err
	}
	if !cfg.DisableDirectRead {
		srv.directRead = true
		srv.extensions = append(srv.extensions, dataconn.ExtensionDirectRead)
	}
	var lns []net.Listener
	for i := 0; i < 3; i++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, itoa(p+i)))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			srv.Close()
			return nil, fmt.Errorf("replica: listen on port %d (P+%d): %w", p+i, i, err)
		}
		lns = append(lns, ln)
	}
	local, err := dataconn.ListenLocal(lns[1].Addr().String())
	if err != nil {
		// Engines on this node then use TCP, as remote ones do.
		log.WithError(err).Warn("replica: no local data socket")
	}
	pr := &Process{Server: srv, errc: make(chan error, 4), log: log}
	vol := cfg.Options.VolumeName
	pr.ctl = grpc.NewServer(grpc.UnaryInterceptor(rpcmeta.IdentityInterceptor(vol, cfg.InstanceName, "replica")))
	enginerpc.RegisterReplicaServiceServer(pr.ctl, srv)
	rpcmeta.RegisterHealth(pr.ctl)
	rpcmeta.RegisterReflection(pr.ctl)
	pr.data = dataconn.NewServer(dataHandler{srv}, log)
	srv.dataConns = pr.data.Conns
	pr.agent = syncagent.NewAgent(syncReplica{srv}, syncagent.Config{Host: host, PortStart: p + 3, PortEnd: p + PortCount - 1,
		VolumeName: vol, HashLockPath: cfg.HashLockPath, Log: log})
	pr.sync = grpc.NewServer(grpc.UnaryInterceptor(rpcmeta.IdentityInterceptor(vol, cfg.InstanceName, "replica")))
	enginerpc.RegisterSyncAgentServiceServer(pr.sync, pr.agent)
	enginerpc.RegisterSyncAgentExtServiceServer(pr.sync, pr.agent.Ext())
	rpcmeta.RegisterReflection(pr.sync)
	go func() { pr.errc <- pr.ctl.Serve(lns[0]) }()
	go func() { pr.errc <- pr.data.Serve(lns[1]) }()
	if local != nil {
		go func() { pr.errc <- pr.data.Serve(local) }()
	}
	go func() { pr.errc <- pr.sync.Serve(lns[2]) }()
	log.WithFields(logrus.Fields{"dir": cfg.Dir, "grpc": lns[0].Addr().String(), "data": lns[1].Addr().String(),
		"sync": lns[2].Addr().String()}).Info("replica: serving")
	return pr, nil
}

// Wait blocks until ctx is done or a server fails, then stops everything and
// closes the replica cleanly.
func (pr *Process) Wait(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-pr.errc:
	}
	pr.Stop()
	if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// Stop stops the servers and closes the replica.
func (pr *Process) Stop() {
	pr.ctl.Stop()
	pr.sync.Stop()
	pr.agent.Close()
	pr.data.Close()
	if err := pr.Server.Close(); err != nil {
		pr.log.WithError(err).Warn("replica: close")
	}
}
