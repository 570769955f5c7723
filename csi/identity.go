package csi

import (
	"context"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// identityServer is the Identity service (Longhorn's identity_server.go
// capabilities: CONTROLLER_SERVICE, VOLUME_ACCESSIBILITY_CONSTRAINTS,
// online volume expansion).
type identityServer struct {
	csi.UnimplementedIdentityServer
	d *Driver
}

func (s *identityServer) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	v := s.d.cfg.Version
	if v == "" {
		v = "unknown"
	}
	return &csi.GetPluginInfoResponse{Name: s.d.cfg.DriverName, VendorVersion: v}, nil
}

func (s *identityServer) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	svc := func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}}
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		svc(csi.PluginCapability_Service_CONTROLLER_SERVICE),
		svc(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS),
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{
			Type: csi.PluginCapability_VolumeExpansion_ONLINE}}},
	}}, nil
}

// Probe is ready when the manager's API answers, and answers ready=false
// (no error) while it does not: the sidecars' ProbeForever waits on
// not-ready but exits on any error other than DeadlineExceeded, which made
// every sidecar crash-loop while the managers were still starting.
func (s *identityServer) Probe(ctx context.Context, _ *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	if err := s.d.client.Ping(ctx); err != nil {
		s.d.log.WithError(err).Warn("csi: probe: manager API not reachable yet")
		return &csi.ProbeResponse{Ready: wrapperspb.Bool(false)}, nil
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}
