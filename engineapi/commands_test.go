package engineapi

import (
	"slices"
	"testing"
)

// TestEngineInstanceSpecISCSIPortal: an iSCSI engine gets its own portal
// port from the instance manager (PortStart+1), so two iSCSI volumes can be
// attached on one node; nbd engines and explicit --iscsi-listen keep one port.
func TestEngineInstanceSpecISCSIPortal(t *testing.T) {
	s := EngineInstanceSpec(EngineOptions{Name: "v-e-0", VolumeName: "v", Size: 4096, Frontend: "iscsi", ListenHost: "10.0.0.1"})
	if s.PortCount != 2 || !slices.Equal(s.PortArgs, []string{"--listen,10.0.0.1:", "--iscsi-listen,10.0.0.1:"}) {
		t.Errorf("iscsi: PortCount %d PortArgs %q; want 2 and a --iscsi-listen port arg", s.PortCount, s.PortArgs)
	}
	s = EngineInstanceSpec(EngineOptions{Name: "v-e-0", VolumeName: "v", Size: 4096, Frontend: "iscsi", ListenHost: "10.0.0.1",
		FrontendArgs: []string{"--iscsi-listen", "10.0.0.1:3260"}})
	if s.PortCount != EnginePortCount || len(s.PortArgs) != 1 {
		t.Errorf("iscsi with --iscsi-listen: PortCount %d PortArgs %q; want the caller's portal only", s.PortCount, s.PortArgs)
	}
	s = EngineInstanceSpec(EngineOptions{Name: "v-e-0", VolumeName: "v", Size: 4096, Frontend: "nbd", ListenHost: "10.0.0.1"})
	if s.PortCount != EnginePortCount || len(s.PortArgs) != 1 {
		t.Errorf("nbd: PortCount %d PortArgs %q; want one port", s.PortCount, s.PortArgs)
	}
}
