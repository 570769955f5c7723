package datastore

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// TestEngineUpgradeCheckRefusedStates: the facts EngineUpgradeCheck reads
// from the stored volume, engine, replica, engine image and instance
// manager objects make lifecycle.CheckEngineUpgrade (what the webhook, the
// REST engineUpgrade action and the automatic upgrade decide with) refuse
// the upgrade of an attached nbd volume in each state Longhorn refuses:
// rebuilding (a WO replica, or a rebuild in the engine's status), degraded,
// expanding (the volume or the engine), restoring (the volume, a standby
// volume, or a replica restoring in the engine's status); the same volume
// healthy and idle is allowed.
func TestEngineUpgradeCheckRefusedStates(t *testing.T) {
	const oldImg, newImg = "longhornio/longhorn:v1", "longhornio/longhorn:v2"
	for _, tc := range []struct {
		name   string
		volume func(*longhorn.VolumeStatus)
		engine func(*longhorn.EngineStatus)
		want   string // "" = allowed
	}{
		{name: "healthy", want: ""},
		{name: "replica WO", engine: func(s *longhorn.EngineStatus) { s.ReplicaModeMap["vol-r-2"] = longhorn.ReplicaModeWO },
			want: "a replica is rebuilding"},
		{name: "rebuild in progress", engine: func(s *longhorn.EngineStatus) {
			s.RebuildStatus = map[string]*longhorn.RebuildStatus{"tcp://10.0.0.2:10000": {IsRebuilding: true}}
		}, want: "a replica is rebuilding"},
		{name: "degraded", volume: func(s *longhorn.VolumeStatus) { s.Robustness = longhorn.VolumeRobustnessDegraded },
			want: "cannot do live upgrade for a unhealthy volume vol"},
		{name: "volume expanding", volume: func(s *longhorn.VolumeStatus) { s.ExpansionRequired = true }, want: "it is expanding"},
		{name: "engine expanding", engine: func(s *longhorn.EngineStatus) { s.IsExpanding = true }, want: "it is expanding"},
		{name: "restore required", volume: func(s *longhorn.VolumeStatus) { s.RestoreRequired = true }, want: "it is restoring a backup"},
		{name: "standby", volume: func(s *longhorn.VolumeStatus) { s.IsStandby = true }, want: "it is restoring a backup"},
		{name: "replica restoring", engine: func(s *longhorn.EngineStatus) {
			s.RestoreStatus = map[string]*longhorn.RestoreStatus{"tcp://10.0.0.1:10000": {IsRestoring: true}}
		}, want: "it is restoring a backup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &longhorn.Volume{ObjectMeta: meta("vol", nil),
				Spec: longhorn.VolumeSpec{Size: 1 << 30, NumberOfReplicas: 2, Frontend: longhorn.VolumeFrontendNBD, Image: oldImg},
				Status: longhorn.VolumeStatus{State: longhorn.VolumeStateAttached, Robustness: longhorn.VolumeRobustnessHealthy,
					CurrentImage: oldImg, CurrentNodeID: "n1"}}
			e := &longhorn.Engine{ObjectMeta: meta("vol-e-0", types.VolumeLabels("vol")),
				Spec:   longhorn.EngineSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol", NodeID: "n1", Image: oldImg}},
				Status: longhorn.EngineStatus{ReplicaModeMap: map[string]longhorn.ReplicaMode{"vol-r-1": longhorn.ReplicaModeRW, "vol-r-2": longhorn.ReplicaModeRW}}}
			if tc.volume != nil {
				tc.volume(&v.Status)
			}
			if tc.engine != nil {
				tc.engine(&e.Status)
			}
			objs := []runtime.Object{v, e,
				&longhorn.EngineImage{ObjectMeta: meta(types.EngineImageName(newImg), nil), Spec: longhorn.EngineImageSpec{Image: newImg}}}
			for i, n := range []string{"n1", "n2"} {
				objs = append(objs,
					&longhorn.Replica{ObjectMeta: meta("vol-r-"+string(rune('1'+i)), nil),
						Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "vol", NodeID: n, Image: oldImg}, Active: true}},
					&longhorn.InstanceManager{ObjectMeta: meta("im-new-"+n, nil), Spec: longhorn.InstanceManagerSpec{NodeID: n, Image: newImg},
						Status: longhorn.InstanceManagerStatus{CurrentState: longhorn.InstanceManagerStateRunning}})
			}
			ds, _ := startedStore(t, objs...)
			c, err := ds.EngineUpgradeCheck(context.Background(), v, newImg)
			if err != nil {
				t.Fatal(err)
			}
			err = lifecycle.CheckEngineUpgrade(c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v (facts %+v)", err, c)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q (facts %+v)", err, tc.want, c)
			}
		})
	}
}
