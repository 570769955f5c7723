package api_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/datastore"
	lh "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

func om(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }

const owner = "node-1"

// TestEveryKind creates, reads, lists, watches, updates and status-updates
// one object of every kind through the generated clientset, and checks the
// datastore's informers follow.
func TestEveryKind(t *testing.T) {
	lhc := clients(t)
	ds := startDataStore(t, lhc)
	c := lhc.LonghornV1beta2()

	t.Run("Volume", func(t *testing.T) {
		exerciseKind(t, ds, c.Volumes(ns), kindCase[*lh.Volume]{
			obj:     &lh.Volume{ObjectMeta: om("crud-vol"), Spec: lh.VolumeSpec{Size: 1 << 30, NumberOfReplicas: 3, Frontend: lh.VolumeFrontendBlockDev, DataEngine: lh.DataEngineTypeV1}},
			setSpec: func(o *lh.Volume) { o.Spec.NumberOfReplicas = 2 },
			specSet: func(o *lh.Volume) bool { return o.Spec.NumberOfReplicas == 2 && o.Spec.Size == 1<<30 },
			setStatus: func(o *lh.Volume) {
				o.Status.State, o.Status.Robustness = lh.VolumeStateDetached, lh.VolumeRobustnessUnknown
			},
			statusSet: func(o *lh.Volume) bool { return o.Status.State == lh.VolumeStateDetached },
			cached: func(ctx context.Context, ds *datastore.DataStore, n string) (*lh.Volume, error) {
				return ds.GetVolumeRO(ctx, n)
			},
		})
	})
	t.Run("Engine", func(t *testing.T) {
		exerciseKind(t, ds, c.Engines(ns), kindCase[*lh.Engine]{
			obj: &lh.Engine{ObjectMeta: om("crud-vol-e-0"), Spec: lh.EngineSpec{
				InstanceSpec: lh.InstanceSpec{VolumeName: "crud-vol", VolumeSize: 1 << 30, NodeID: owner, DesireState: lh.InstanceStateStopped, DataEngine: lh.DataEngineTypeV1}}},
			setSpec: func(o *lh.Engine) {
				o.Spec.ReplicaAddressMap = map[string]string{"crud-vol-r-0a0b0c0d": "10.0.0.2:10000"}
			},
			specSet: func(o *lh.Engine) bool { return o.Spec.ReplicaAddressMap["crud-vol-r-0a0b0c0d"] == "10.0.0.2:10000" },
			setStatus: func(o *lh.Engine) {
				o.Status.CurrentState, o.Status.CurrentSize = lh.InstanceStateRunning, 1<<30
				o.Status.ReplicaModeMap = map[string]lh.ReplicaMode{"crud-vol-r-0a0b0c0d": lh.ReplicaModeRW}
			},
			statusSet: func(o *lh.Engine) bool {
				return o.Status.CurrentState == lh.InstanceStateRunning && o.Status.ReplicaModeMap["crud-vol-r-0a0b0c0d"] == lh.ReplicaModeRW
			},
			cached: func(ctx context.Context, ds *datastore.DataStore, n string) (*lh.Engine, error) {
				return ds.GetEngineRO(ctx, n)
			},
		})
	})
	t.Run("Replica", func(t *testing.T) {
		exerciseKind(t, ds, c.Replicas(ns), kindCase[*lh.Replica]{
			obj: &lh.Replica{ObjectMeta: om("crud-vol-r-0a0b0c0d"), Spec: lh.ReplicaSpec{
				InstanceSpec: lh.InstanceSpec{VolumeName: "crud-vol", VolumeSize: 1 << 30, NodeID: owner, DataEngine: lh.DataEngineTypeV1}, DataDirectoryName: "crud-vol-0a0b0c0d"}},
			setSpec:   func(o *lh.Replica) { o.Spec.DiskPath = "/var/lib/longhorn" },
			specSet:   func(o *lh.Replica) bool { return o.Spec.DiskPath == "/var/lib/longhorn" },
			setStatus: func(o *lh.Replica) { o.Status.CurrentState, o.Status.Port = lh.InstanceStateRunning, 10000 },
			statusSet: func(o *lh.Replica) bool { return o.Status.Port == 10000 },
			cached: func(ctx context.Context, ds *datastore.DataStore, n string) (*lh.Replica, error) {
				return ds.GetReplicaRO(ctx, n)
			},
		})
	})
	t.Run("Node", func(t *testing.T) {
		exerciseKind(t, ds, c.Nodes(ns), kindCase[*lh.Node]{
			obj: &lh.Node{ObjectMeta: om(owner), Spec: lh.NodeSpec{Name: owner, AllowScheduling: true}},
			setSpec: func(o *lh.Node) {
				o.Spec.Disks = map[string]lh.DiskSpec{"default-disk-1": {Type: lh.DiskTypeFilesystem, Path: "/var/lib/longhorn"}}
			},
			specSet: func(o *lh.Node) bool { return o.Spec.Disks["default-disk-1"].Path == "/var/lib/longhorn" },
			setStatus: func(o *lh.Node) {
				o.Status.Conditions = lh.SetCondition(nil, lh.NodeConditionTypeReady, lh.ConditionStatusTrue, "", "", "2026-01-01T00:00:00Z")
				o.Status.DiskStatus = map[string]*lh.DiskStatus{"default-disk-1": {StorageMaximum: 100 << 30}}
			},
			statusSet: func(o *lh.Node) bool {
				return lh.GetCondition(o.Status.Conditions, lh.NodeConditionTypeReady).Status == lh.ConditionStatusTrue
			},
			cached: func(ctx context.Context, ds *datastore.DataStore, n string) (*lh.Node, error) {
				return ds.GetNodeRO(ctx, n)
			},
		})
	})
	t.Run("InstanceManager", func(t *testing.T) {
		exerciseKind(t, ds, c.InstanceManagers(ns), kindCase[*lh.InstanceManager]{
			obj: &lh.InstanceManager{ObjectMeta: om(types.InstanceManagerName(owner, "img", lh.DataEngineTypeV1)),
				Spec: lh.InstanceManagerSpec{NodeID: owner, Type: lh.InstanceManagerTypeAllInOne, DataEngine: lh.DataEngineTypeV1}},
			setSpec: func(o *lh.InstanceManager) { o.Spec.Image = "img" },
			specSet: func(o *lh.InstanceManager) bool { return o.Spec.Image == "img" },
			setStatus: func(o *lh.InstanceManager) {
				o.Status.CurrentState, o.Status.IP = lh.InstanceManagerStateRunning, "10.0.0.1"
			},
			statusSet: func(o *lh.InstanceManager) bool { return o.Status.CurrentState == lh.InstanceManagerStateRunning },
			cached: func(ctx context.Context, ds *datastore.DataStore, n string) (*lh.InstanceManager, error) {
				return ds.GetInstanceManagerRO(ctx, n)
			},
		})
	})
	t.Run("Setting", func(t *testing.T) {
		exerciseKind(t, ds, c.Settings(ns), kindCase[*lh.Setting]{
			obj:       &lh.Setting{ObjectMeta: om(string(types.SettingNameStorageOverProvisioningPercentage)), Value: "100"},
			setSpec:   func(o *lh.Setting) { o.Value = "150" },
			specSet:   func(o *lh.Setting) bool { return o.Value == "150" },
			setStatus: func(o *lh.Setting) { o.Status.Applied = true },
			statusSet: func(o *lh.Setting) bool { return o.Status.Applied },
			cached: func(ctx context.Context, ds *datastore.DataStore, n string) (*lh.Setting, error) {
				return ds.GetSettingRO(ctx, types.SettingName(n))
			},
		})
	})
	moreKinds(t, ds, c)
}
