package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/controller/lifecycle"
	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

var nextIMName = types.InstanceManagerName("n1", nextImage, longhorn.DataEngineTypeV1)

// upgradingEngine is engine vol-e-0 running in n1's first instance manager
// (its process listed there) whose spec asks for nextImage on twin t-1.
func upgradingEngine(t *testing.T) *fixture {
	t.Helper()
	e := testEngine(map[string]string{"r-1": "10.0.0.1:10000"})
	e.Spec.Image = nextImage
	e.Spec.UpgradedReplicaAddressMap = map[string]string{"t-1": "10.0.1.1:10000"}
	e.Status = longhorn.EngineStatus{InstanceStatus: longhorn.InstanceStatus{OwnerID: "n1", InstanceManagerName: imName,
		CurrentState: longhorn.InstanceStateRunning, CurrentImage: "longhorn:test", IP: "10.0.0.1", Port: 10100, Started: true}}
	objs := append(readyNode("n1"), e)
	for _, o := range nextImageObjects() {
		if im, ok := o.(*longhorn.InstanceManager); !ok || im.Spec.NodeID == "n1" {
			objs = append(objs, o)
		}
	}
	f := newFixture(t, objs...)
	f.setIMEngine(imName, longhorn.InstanceStateRunning, 10100, "")
	f.fakeIM().put(&engineapi.Instance{Spec: engineapi.InstanceSpec{Name: "vol-e-0", Type: engineapi.InstanceTypeEngine},
		Status: engineapi.InstanceStatus{State: engineapi.InstanceStateRunning, PortStart: 10100}})
	return f
}

// setIMEngine sets (state "" removes) the process vol-e-0 in instance
// manager im's status, as the instance manager controller reports it.
func (f *fixture) setIMEngine(im string, state longhorn.InstanceState, port int32, errMsg string) {
	f.t.Helper()
	obj, err := f.lh.LonghornV1beta2().InstanceManagers(testNS).Get(f.ctx, im, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	obj.Status.InstanceEngines = map[string]longhorn.InstanceProcess{}
	if state != "" {
		obj.Status.InstanceEngines["vol-e-0"] = longhorn.InstanceProcess{Status: longhorn.InstanceProcessStatus{State: state, PortStart: port,
			ErrorMsg: errMsg, Type: longhorn.InstanceTypeEngine}}
	}
	if _, err := f.lh.LonghornV1beta2().InstanceManagers(testNS).UpdateStatus(f.ctx, obj, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) upgradeCond() longhorn.Condition {
	return longhorn.GetCondition(f.engine("vol-e-0").Status.Conditions, longhorn.EngineConditionTypeLiveUpgrade)
}

func (f *fixture) mustSyncEngine() {
	f.t.Helper()
	if _, err := f.syncEngine(); err != nil {
		f.t.Fatal(err)
	}
}

// The engine side of a live upgrade that succeeds: the phase is recorded
// before anything starts, then the new engine starts in the new image's
// instance manager with --upgrade-from the old engine on the twins; once it
// serves, the old process goes and status names the new instance manager,
// address and image, the twins RW.
func TestEngineLiveUpgradeSwitch(t *testing.T) {
	f := upgradingEngine(t)
	newIM := f.api.im(imAddress("10.0.1.1"))
	f.mustSyncEngine()
	if c := f.upgradeCond(); c.Status != longhorn.ConditionStatusTrue || c.Reason != string(lifecycle.UpgradeRunning) || newIM.createCount() != 0 {
		t.Fatalf("first sync: condition %+v, %d creates", c, newIM.createCount())
	}
	f.mustSyncEngine()
	if newIM.createCount() != 1 {
		t.Fatalf("%d creates in the new instance manager", newIM.createCount())
	}
	args := newIM.creates[0].Args
	if !slices.Contains(args, "tcp://10.0.1.1:10000") || slices.Contains(args, "tcp://10.0.0.1:10000") ||
		!slices.Equal(args[len(args)-2:], []string{"--upgrade-from", "10.0.0.1:10100"}) ||
		!slices.Equal(newIM.creates[0].PortArgs, []string{"--listen,10.0.1.1:"}) {
		t.Fatalf("new engine process %+v", newIM.creates[0])
	}
	f.setIMEngine(nextIMName, longhorn.InstanceStateStarting, 10200, "")
	f.mustSyncEngine()
	if f.engine("vol-e-0").Status.InstanceManagerName != imName {
		t.Fatal("switched before the new engine serves")
	}
	f.setIMEngine(nextIMName, longhorn.InstanceStateRunning, 10200, "")
	f.mustSyncEngine()
	e := f.engine("vol-e-0")
	if e.Status.InstanceManagerName != nextIMName || e.Status.IP != "10.0.1.1" || e.Status.Port != 10200 ||
		e.Status.CurrentImage != nextImage || e.Status.ReplicaModeMap["t-1"] != longhorn.ReplicaModeRW {
		t.Fatalf("status after the switch %+v", e.Status)
	}
	if c := f.upgradeCond(); c.Status == longhorn.ConditionStatusTrue {
		t.Fatalf("condition still held: %+v", c)
	}
	if !slices.Contains(f.fakeIM().deletes, "vol-e-0") {
		t.Fatal("the old engine process was not deleted")
	}
	if !hasEvent(f.events(), "Normal EngineUpgraded") {
		t.Fatal("no EngineUpgraded event")
	}
}

// A new engine that exits is removed, and the failure is reported only once
// the old engine serves the volume again; the spec rolled back, the phase
// goes idle.
func TestEngineLiveUpgradeFailure(t *testing.T) {
	f := upgradingEngine(t)
	newIM := f.api.im(imAddress("10.0.1.1"))
	f.mustSyncEngine()
	f.mustSyncEngine()
	f.setIMEngine(nextIMName, longhorn.InstanceStateError, 10200, "listen /var/run/longhorn/nbd/vol.sock.upgrade: address in use")
	f.mustSyncEngine()
	if c := f.upgradeCond(); c.Reason != string(lifecycle.UpgradeAborting) || c.Status != longhorn.ConditionStatusTrue {
		t.Fatalf("after the exit: %+v", c)
	}
	f.mustSyncEngine()
	if !slices.Contains(newIM.deletes, "vol-e-0") {
		t.Fatal("the failed new engine was not removed")
	}
	f.setIMEngine(nextIMName, "", 0, "")
	fe := f.api.setEngine("vol-e-0", &engineapi.Volume{Name: "vol", ReplicaCount: 0, FrontendState: "down"}, nil)
	f.mustSyncEngine()
	if c := f.upgradeCond(); c.Reason != string(lifecycle.UpgradeAborting) {
		t.Fatalf("reported before the old engine serves: %+v", c)
	}
	f.api.mu.Lock()
	fe.vol = &engineapi.Volume{Name: "vol", ReplicaCount: 1, FrontendState: "up"}
	f.api.mu.Unlock()
	f.mustSyncEngine()
	c := f.upgradeCond()
	if c.Reason != string(lifecycle.UpgradeFailed) || c.Status != longhorn.ConditionStatusFalse || c.Message == "" {
		t.Fatalf("after the old engine serves: %+v", c)
	}
	if e := f.engine("vol-e-0"); e.Status.InstanceManagerName != imName || e.Status.CurrentImage != "longhorn:test" {
		t.Fatalf("engine moved: %+v", e.Status)
	}
	e := f.engine("vol-e-0")
	e.Spec.Image, e.Spec.UpgradedReplicaAddressMap = "longhorn:test", nil
	f.updateEngine(e)
	f.mustSyncEngine()
	if c := f.upgradeCond(); c.Reason != "" || c.Status == longhorn.ConditionStatusTrue {
		t.Fatalf("after the rollback: %+v", c)
	}
}

// A new engine that dies after VolumeUpgradeDone (the old engine dropped
// the volume for good) leaves an old engine that never serves again: once
// oldEngineGrace has passed since the abort began, the old engine's process
// is deleted with a FailedEngineUpgrade event, the engine is lost (error),
// and the failure is reported, so the volume rolls back and restarts the
// engine on the old image.
func TestEngineLiveUpgradeOldEngineDrained(t *testing.T) {
	f := upgradingEngine(t)
	newIM := f.api.im(imAddress("10.0.1.1"))
	f.mustSyncEngine()
	f.mustSyncEngine()
	f.setIMEngine(nextIMName, longhorn.InstanceStateError, 10200, "--listen 10.0.1.1:10200: address already in use")
	f.mustSyncEngine()
	f.mustSyncEngine()
	if !slices.Contains(newIM.deletes, "vol-e-0") {
		t.Fatal("the failed new engine was not removed")
	}
	f.setIMEngine(nextIMName, "", 0, "")
	f.api.setEngine("vol-e-0", &engineapi.Volume{Name: "vol", ReplicaCount: 0, FrontendState: "down"}, nil)
	f.now = f.now.Add(oldEngineGrace - time.Second)
	f.mustSyncEngine()
	if c := f.upgradeCond(); c.Reason != string(lifecycle.UpgradeAborting) || slices.Contains(f.fakeIM().deletes, "vol-e-0") {
		t.Fatalf("within the grace: %+v, old IM deletes %v", c, f.fakeIM().deletes)
	}
	f.now = f.now.Add(2 * time.Second)
	f.mustSyncEngine()
	if !slices.Contains(f.fakeIM().deletes, "vol-e-0") {
		t.Fatal("the drained old engine was not deleted after the grace")
	}
	if !hasEvent(f.events(), "Warning FailedEngineUpgrade Old engine vol-e-0 did not serve") {
		t.Fatalf("no event for the deleted old engine: %v", f.events())
	}
	f.setIMEngine(imName, "", 0, "")
	f.mustSyncEngine()
	e := f.engine("vol-e-0")
	c := f.upgradeCond()
	if c.Reason != string(lifecycle.UpgradeFailed) || c.Status != longhorn.ConditionStatusFalse ||
		!strings.Contains(c.Message, "address already in use") {
		t.Fatalf("after the old engine went: %+v", c)
	}
	if e.Status.CurrentState != longhorn.InstanceStateError || e.Status.CurrentImage == nextImage {
		t.Fatalf("engine after the old process went: %s image %s", e.Status.CurrentState, e.Status.CurrentImage)
	}
	// The failure stays reported, although the engine no longer runs, until
	// the volume controller rolls the request back.
	f.mustSyncEngine()
	if c := f.upgradeCond(); c.Reason != string(lifecycle.UpgradeFailed) {
		t.Fatalf("failure not kept for the rollback: %+v", c)
	}
	e.Spec.Image, e.Spec.UpgradedReplicaAddressMap = "longhorn:test", nil
	f.updateEngine(e)
	f.mustSyncEngine()
	if c := f.upgradeCond(); c.Reason != "" || c.Status == longhorn.ConditionStatusTrue {
		t.Fatalf("after the rollback: %+v", c)
	}
}
