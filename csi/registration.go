package csi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Registration makes the node plugin known to kubelet through its plugin
// watcher (k8s.io/kubelet pluginregistration v1), the job of the
// node-driver-registrar sidecar, which the Go module proxy does not serve:
// a socket <kubelet dir>/plugins_registry/<driver>-reg.sock answers
// GetInfo with the CSI endpoint as kubelet sees it, and kubelet reports
// the outcome through NotifyRegistrationStatus.
type Registration struct {
	// Dir is kubelet's plugin registry (/var/lib/kubelet/plugins_registry).
	Dir string
	// Endpoint is the CSI socket path on the host, as kubelet opens it
	// (/var/lib/kubelet/plugins/driver.longhorn.io/csi.sock).
	Endpoint string
	// Driver is the driver name.
	Driver string
	// OnStatus receives kubelet's verdict (nil error when registered).
	OnStatus func(error)
}

type registrationServer struct {
	registerapi.UnimplementedRegistrationServer
	r Registration
}

func (s *registrationServer) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: s.r.Driver, Endpoint: s.r.Endpoint,
		SupportedVersions: []string{"1.0.0"}}, nil
}

func (s *registrationServer) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.r.OnStatus != nil {
		var err error
		if !st.GetPluginRegistered() {
			err = fmt.Errorf("kubelet refused the plugin: %s", st.GetError())
		}
		s.r.OnStatus(err)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Serve listens on Dir/<driver>-reg.sock until ctx ends, then removes it.
func (r Registration) Serve(ctx context.Context) error {
	if err := os.MkdirAll(r.Dir, 0o750); err != nil {
		return fmt.Errorf("plugin registration: %w", err)
	}
	sock := filepath.Join(r.Dir, r.Driver+"-reg.sock")
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("plugin registration: %w", err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("plugin registration: %w", err)
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, &registrationServer{r: r})
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		srv.Stop()
		_ = os.Remove(sock)
		return nil
	case err := <-errc:
		return err
	}
}

// HealthServer answers GET /healthz with 200 when the driver's Probe is
// ready, 503 otherwise: the livenessprobe sidecar's job (not on the module
// proxy either), for the plugin container's liveness probe.
func HealthServer(addr, endpoint string) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := probeEndpoint(ctx, endpoint); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
}

// probeEndpoint calls Identity.Probe on the CSI socket.
func probeEndpoint(ctx context.Context, endpoint string) error {
	path, err := ParseEndpoint(endpoint)
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{})
	if err != nil {
		return err
	}
	if r := resp.GetReady(); r != nil && !r.GetValue() {
		return errors.New("driver not ready")
	}
	return nil
}
