package controller

import (
	"testing"

	"github.com/longhorn-go/longhorn/types"
)

// TestAdoptingVolumeGetsNoReplicas: while `longhorn adopt` creates a
// volume's Replica objects from existing directories (the volume carries
// types.AdoptionAnnotation), the volume controller makes none of its own;
// once the annotation is gone it replenishes as usual.
func TestAdoptingVolumeGetsNoReplicas(t *testing.T) {
	v := newVolume("vol", 2)
	v.Annotations = map[string]string{types.AdoptionAnnotation: "true"}
	f := newFixture(t, threeNodeObjects(v)...)
	f.syncVolume("vol")
	f.syncVolume("vol")
	if reps := f.replicas("vol"); len(reps) != 0 {
		t.Fatalf("%d replicas created for a volume being adopted", len(reps))
	}
	v = f.volume("vol")
	delete(v.Annotations, types.AdoptionAnnotation)
	f.updateVolume(v)
	f.syncVolume("vol")
	if reps := f.replicas("vol"); len(reps) != 2 {
		t.Fatalf("%d replicas after adoption ended, want 2", len(reps))
	}
}
