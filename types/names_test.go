package types

import (
	"regexp"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func TestNames(t *testing.T) {
	if got := EngineNameForVolume("vol1", 0); got != "vol1-e-0" {
		t.Errorf("engine name = %q", got)
	}
	if got := EngineNameForVolume("vol1", 12); got != "vol1-e-12" {
		t.Errorf("engine name = %q", got)
	}
	hex8 := regexp.MustCompile(`^[0-9a-f]{8}$`)
	id := RandomID()
	if !hex8.MatchString(id) || RandomID() == id {
		t.Errorf("RandomID %q: want 8 fresh hex digits", id)
	}
	det := DeterministicID("vol1", 3)
	if !hex8.MatchString(det) || det != DeterministicID("vol1", 3) || det == DeterministicID("vol1", 4) {
		t.Errorf("DeterministicID must be 8 hex digits, stable per (owner, index)")
	}
	if got := ReplicaNameForVolume("vol1", "0a1b2c3d"); got != "vol1-r-0a1b2c3d" {
		t.Errorf("replica name = %q", got)
	}
	if got := ReplicaDataDirectoryName("vol1", "0a1b2c3d"); got != "vol1-0a1b2c3d" {
		t.Errorf("data dir = %q", got)
	}
	im := InstanceManagerName("node-1", "longhornio/longhorn-instance-manager:v1", longhorn.DataEngineTypeV1)
	if !regexp.MustCompile(`^instance-manager-[0-9a-f]{32}$`).MatchString(im) {
		t.Errorf("instance manager name = %q", im)
	}
	if im == InstanceManagerName("node-2", "longhornio/longhorn-instance-manager:v1", longhorn.DataEngineTypeV1) ||
		im == InstanceManagerName("node-1", "longhornio/longhorn-instance-manager:v1", longhorn.DataEngineTypeV2) {
		t.Error("instance manager names must differ by node and data engine")
	}
	// SHA-512("n" + "i" + "v1") prefix, computed independently with sha512sum.
	if got := InstanceManagerName("n", "i", longhorn.DataEngineTypeV1); got != "instance-manager-e526bde62ecf46e4741609a7d87c048a" {
		t.Errorf("instance manager name = %q", got)
	}
}
