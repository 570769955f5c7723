// Package server holds the gRPC services of the instance manager, shaped like
// csi-driver-host-path: one file per service (process_server.go,
// instance_server.go, proxy_server.go), requests validated before anything
// changes, creates idempotent by name, a logging interceptor that redacts
// secrets, and the process Executor and HealthChecker injected through the
// process.Manager.
//
// Listeners: Config.Listen serves ProcessManagerService, imrpc.InstanceService
// and grpc.health.v1.Health; Config.ProxyListen serves imrpc.ProxyEngineService
// and grpc.health.v1.Health (Longhorn's ports 8500 and 8501).
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
	"github.com/longhorn-go/longhorn/instance-manager/process"
)

// Config configures a Server.
type Config struct {
	// Listen is the process manager / instance service address ("HOST:PORT", port 0 picks one).
	Listen string
	// ProxyListen is the engine proxy address.
	ProxyListen string
	// Manager runs the processes; required.
	Manager *process.Manager
	// DefaultBinary runs instances whose spec names no binary; default: this executable.
	DefaultBinary string
	// ReplaceTimeout bounds ProcessReplace/InstanceReplace waiting for the new
	// process to be running; default 60 s.
	ReplaceTimeout time.Duration
	// EngineConnIdle closes proxy connections to an engine unused this long; default 5 min.
	EngineConnIdle time.Duration
	// Logger; default logrus.StandardLogger().
	Logger logrus.FieldLogger
	// NoProxy plays an instance manager older than the engine proxy (the
	// upgrade story of Longhorn's storage-network design): VersionGet
	// reports proxy API version 0 and nothing listens on ProxyListen, so
	// the manager falls back to calling engines directly.
	NoProxy bool
	// TLS, when set, makes every service (process, instance, proxy) serve
	// TLS with it (mutual: see engineapi.ServerTLSFromDir); nil: plaintext.
	TLS *tls.Config
}

// Server runs the instance manager's two gRPC servers.
type Server struct {
	cfg     Config
	main    *grpc.Server
	proxy   *grpc.Server
	health  *health.Server
	conns   *engineConns
	lis     net.Listener
	proxLis net.Listener
	wg      sync.WaitGroup
	errs    chan error
}

// New builds the servers; Start binds them.
func New(cfg Config) (*Server, error) {
	if cfg.Manager == nil {
		return nil, errors.New("instance manager server: Manager is required")
	}
	if cfg.DefaultBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("instance manager server: own executable: %w", err)
		}
		cfg.DefaultBinary = exe
	}
	if cfg.ReplaceTimeout == 0 {
		cfg.ReplaceTimeout = 60 * time.Second
	}
	if cfg.EngineConnIdle == 0 {
		cfg.EngineConnIdle = 5 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.StandardLogger()
	}
	s := &Server{cfg: cfg, health: health.NewServer(), conns: newEngineConns(cfg.EngineConnIdle), errs: make(chan error, 2)}
	opts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(loggingUnary(cfg.Logger)),
		grpc.ChainStreamInterceptor(loggingStream(cfg.Logger)),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	}
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	s.main = grpc.NewServer(opts...)
	imrpc.RegisterProcessManagerServiceServer(s.main, &processServer{m: cfg.Manager, replaceTimeout: cfg.ReplaceTimeout, noProxy: cfg.NoProxy})
	imrpc.RegisterInstanceServiceServer(s.main, &instanceServer{m: cfg.Manager, defaultBinary: cfg.DefaultBinary,
		replaceTimeout: cfg.ReplaceTimeout, noProxy: cfg.NoProxy})
	healthpb.RegisterHealthServer(s.main, s.health)
	services := []string{"", imrpc.ProcessManagerService_ServiceDesc.ServiceName, imrpc.InstanceService_ServiceDesc.ServiceName}
	if !cfg.NoProxy {
		s.proxy = grpc.NewServer(opts...)
		ps := &proxyServer{conns: s.conns}
		imrpc.RegisterProxyEngineServiceServer(s.proxy, ps)
		imrpc.RegisterProxyEngineExtServiceServer(s.proxy, &proxyExtServer{p: ps})
		healthpb.RegisterHealthServer(s.proxy, s.health)
		services = append(services, imrpc.ProxyEngineService_ServiceDesc.ServiceName, imrpc.ProxyEngineExtService_ServiceDesc.ServiceName)
	}
	for _, svc := range services {
		s.health.SetServingStatus(svc, healthpb.HealthCheckResponse_SERVING)
	}
	return s, nil
}

// Start binds both listeners and serves in the background. Errors from
// serving arrive on Err.
func (s *Server) Start() error {
	var err error
	if s.lis, err = net.Listen("tcp", s.cfg.Listen); err != nil {
		return fmt.Errorf("--listen %s: %w", s.cfg.Listen, err)
	}
	type served struct {
		srv *grpc.Server
		lis net.Listener
	}
	all := []served{{s.main, s.lis}}
	if s.proxy != nil {
		if s.proxLis, err = net.Listen("tcp", s.cfg.ProxyListen); err != nil {
			_ = s.lis.Close()
			return fmt.Errorf("--proxy-listen %s: %w", s.cfg.ProxyListen, err)
		}
		all = append(all, served{s.proxy, s.proxLis})
	}
	for _, p := range all {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := p.srv.Serve(p.lis); err != nil {
				s.errs <- fmt.Errorf("serving %s: %w", p.lis.Addr(), err)
			}
		}()
	}
	s.cfg.Logger.WithFields(logrus.Fields{"listen": s.lis.Addr().String(), "proxy": s.ProxyAddr()}).Info("instance manager serving")
	return nil
}

// Addr is the bound process manager address (after Start).
func (s *Server) Addr() string { return s.lis.Addr().String() }

// ProxyAddr is the bound proxy address (after Start); "" with NoProxy.
func (s *Server) ProxyAddr() string {
	if s.proxLis == nil {
		return ""
	}
	return s.proxLis.Addr().String()
}

// Err delivers an error when a server stops serving on its own.
func (s *Server) Err() <-chan error { return s.errs }

// Stop shuts down: health turns NOT_SERVING, every process is stopped
// (SIGTERM, then SIGKILL after the manager's stop timeout) and watch streams
// end, then both servers stop (gracefully until ctx ends).
func (s *Server) Stop(ctx context.Context) error {
	s.health.Shutdown()
	err := s.cfg.Manager.Shutdown(ctx)
	done := make(chan struct{})
	go func() {
		s.main.GracefulStop()
		if s.proxy != nil {
			s.proxy.GracefulStop()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.main.Stop()
		if s.proxy != nil {
			s.proxy.Stop()
		}
		<-done
	}
	s.conns.close()
	s.wg.Wait()
	return err
}
