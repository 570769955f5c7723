package controller

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

func TestDecideEngineImageStatus(t *testing.T) {
	ei := &longhorn.EngineImage{Spec: longhorn.EngineImageSpec{Image: "longhorn:test"}}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		obs      engineImageObservation
		state    longhorn.EngineImageState
		ready    longhorn.ConditionStatus
		noRefSet bool
	}{
		{"all nodes run an instance manager", engineImageObservation{nodes: []string{"n1", "n2"}, deployed: map[string]bool{"n1": true, "n2": true}, refCount: 3, isDefault: true},
			longhorn.EngineImageStateDeployed, longhorn.ConditionStatusTrue, false},
		{"one node without", engineImageObservation{nodes: []string{"n1", "n2"}, deployed: map[string]bool{"n1": true}, isDefault: true},
			longhorn.EngineImageStateDeploying, longhorn.ConditionStatusFalse, true},
		{"no node up", engineImageObservation{deployed: map[string]bool{}, isDefault: true}, longhorn.EngineImageStateDeploying, longhorn.ConditionStatusFalse, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := decideEngineImageStatus(ei, c.obs, "n1", now)
			cond := longhorn.GetCondition(st.Conditions, longhorn.EngineImageConditionTypeReady)
			if st.State != c.state || cond.Status != c.ready || st.OwnerID != "n1" || st.RefCount != c.obs.refCount ||
				(st.NoRefSince != "") != c.noRefSet || len(st.NodeDeploymentMap) != len(c.obs.nodes) {
				t.Errorf("status %+v", st)
			}
			if st.CLIAPIVersion != engineapi.CurrentCLIAPIVersion || st.ControllerAPIVersion != engineapi.CurrentControllerAPIVersion || st.Version == "" {
				t.Errorf("versions %+v", st.EngineVersionDetails)
			}
			// The same observation later writes nothing new.
			next := ei.DeepCopy()
			next.Status = st
			if again := decideEngineImageStatus(next, c.obs, "n1", now.Add(time.Minute)); again.NoRefSince != st.NoRefSince ||
				longhorn.GetCondition(again.Conditions, longhorn.EngineImageConditionTypeReady) != cond {
				t.Errorf("second decision changed: %+v", again)
			}
		})
	}
}

// An engine image other than the manager's own (an older one left by an
// upgrade) keeps the version details its manager recorded, and is
// incompatible when its CLI API version is outside the range this manager
// speaks (older than MinCLIAPIVersion, newer than CurrentCLIAPIVersion, or
// never recorded).
func TestDecideOlderEngineImage(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	obs := engineImageObservation{nodes: []string{"n1", "n2"}, deployed: map[string]bool{"n1": true, "n2": true}, refCount: 1}
	cases := []struct {
		cli   int
		state longhorn.EngineImageState
	}{
		{engineapi.CurrentCLIAPIVersion, longhorn.EngineImageStateDeployed},
		{engineapi.MinCLIAPIVersion, longhorn.EngineImageStateDeployed},
		{engineapi.MinCLIAPIVersion - 1, longhorn.EngineImageStateIncompatible},
		{engineapi.CurrentCLIAPIVersion + 1, longhorn.EngineImageStateIncompatible},
		{0, longhorn.EngineImageStateIncompatible},
	}
	for _, c := range cases {
		ei := &longhorn.EngineImage{Spec: longhorn.EngineImageSpec{Image: "longhorn:old"}, Status: longhorn.EngineImageStatus{
			EngineVersionDetails: longhorn.EngineVersionDetails{Version: "v1.0.0", CLIAPIVersion: c.cli}}}
		st := decideEngineImageStatus(ei, obs, "n1", now)
		cond := longhorn.GetCondition(st.Conditions, longhorn.EngineImageConditionTypeReady)
		incompatible := c.state == longhorn.EngineImageStateIncompatible
		if st.State != c.state || st.Incompatible != incompatible || (cond.Status == longhorn.ConditionStatusTrue) == incompatible ||
			st.Version != "v1.0.0" || st.CLIAPIVersion != c.cli {
			t.Errorf("CLI API %d: state %s incompatible %v condition %+v details %+v", c.cli, st.State, st.Incompatible, cond, st.EngineVersionDetails)
		}
		if incompatible && !strings.Contains(cond.Message, "outside the range") {
			t.Errorf("CLI API %d: message %q", c.cli, cond.Message)
		}
	}
}

// TestEngineImageCreatedAndDeployed: the manager creates the EngineImage of
// its --engine-image and reports it deployed on the node whose instance
// manager runs, used by the volume's replica.
func TestEngineImageCreatedAndDeployed(t *testing.T) {
	objs := append(readyNode("n1"), &longhorn.InstanceManager{ObjectMeta: metav1.ObjectMeta{Name: "im-n1", Namespace: testNS},
		Spec:   longhorn.InstanceManagerSpec{NodeID: "n1"},
		Status: longhorn.InstanceManagerStatus{CurrentState: longhorn.InstanceManagerStateRunning}},
		&longhorn.Replica{ObjectMeta: metav1.ObjectMeta{Name: "v-r-1", Namespace: testNS},
			Spec: longhorn.ReplicaSpec{InstanceSpec: longhorn.InstanceSpec{VolumeName: "v", Image: "longhorn:test"}}})
	f := newFixture(t, objs...)
	c := fixtureController[*EngineImageController](f)
	name := types.EngineImageName("longhorn:test")
	key := testNS + "/" + name
	if _, err := c.syncEngineImage(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	var ei *longhorn.EngineImage
	waitFor(t, func() bool {
		var err error
		ei, err = f.ds.GetEngineImageRO(f.ctx, name)
		return err == nil
	})
	if ei.Spec.Image != "longhorn:test" {
		t.Fatalf("engine image %+v", ei.Spec)
	}
	if _, err := c.syncEngineImage(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	got, err := f.lh.LonghornV1beta2().EngineImages(testNS).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != longhorn.EngineImageStateDeployed || !got.Status.NodeDeploymentMap["n1"] || got.Status.RefCount != 1 || got.Status.OwnerID != "n1" {
		t.Errorf("status %+v", got.Status)
	}
	// Another image's key is not created.
	if _, err := c.syncEngineImage(f.ctx, testNS+"/ei-other"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.lh.LonghornV1beta2().EngineImages(testNS).Get(f.ctx, "ei-other", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ei-other: %v", err)
	}
}

// TestPickAutoUpgrades is concurrent-automatic-engine-upgrade-per-node-limit:
// per owner node, eligible volumes (by name) up to the limit minus the
// volumes already upgrading there; 0 disables it.
func TestPickAutoUpgrades(t *testing.T) {
	vols := []autoUpgradeVolume{
		{name: "c", node: "n1", eligible: true},
		{name: "a", node: "n1", eligible: true},
		{name: "b", node: "n1", upgrading: true},
		{name: "d", node: "n2", eligible: true},
		{name: "e", node: "n2"},
		{name: "f", node: "n2", eligible: true},
	}
	for _, tc := range []struct {
		limit int
		want  string
	}{{0, ""}, {1, "d"}, {2, "a d f"}, {5, "a c d f"}} {
		if got := strings.Join(pickAutoUpgrades(vols, tc.limit), " "); got != tc.want {
			t.Errorf("limit %d: picked %q, want %q", tc.limit, got, tc.want)
		}
	}
}

// TestEngineImageExpiry is Longhorn's automatic clean-up of an unused
// engine image: expired once refCount has been 0 for 60 minutes, never for
// the default image, an image in use or one without noRefSince; otherwise
// the time left.
func TestEngineImageExpiry(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }
	cases := []struct {
		name      string
		st        longhorn.EngineImageStatus
		protected bool
		expired   bool
		wait      time.Duration
	}{
		{"unused for 61 min", longhorn.EngineImageStatus{NoRefSince: ago(61 * time.Minute)}, false, true, 0},
		{"unused for exactly 60 min", longhorn.EngineImageStatus{NoRefSince: ago(60 * time.Minute)}, false, true, 0},
		{"unused for 20 min", longhorn.EngineImageStatus{NoRefSince: ago(20 * time.Minute)}, false, false, 40 * time.Minute},
		{"default image unused for a day", longhorn.EngineImageStatus{NoRefSince: ago(24 * time.Hour)}, true, false, 0},
		{"in use", longhorn.EngineImageStatus{RefCount: 2, NoRefSince: ago(2 * time.Hour)}, false, false, 0},
		{"noRefSince unset", longhorn.EngineImageStatus{}, false, false, 0},
		{"noRefSince unreadable", longhorn.EngineImageStatus{NoRefSince: "yesterday"}, false, false, 0},
	}
	for _, c := range cases {
		expired, wait := engineImageExpiry(c.st, c.protected, now)
		if expired != c.expired || wait != c.wait {
			t.Errorf("%s: expired %v wait %v, want %v %v", c.name, expired, wait, c.expired, c.wait)
		}
	}
	ei := &longhorn.EngineImage{Spec: longhorn.EngineImageSpec{Image: "longhorn:old"}, Status: longhorn.EngineImageStatus{NoRefSince: "yesterday"}}
	obs := engineImageObservation{nodes: []string{"n1"}, deployed: map[string]bool{"n1": true}}
	if st := decideEngineImageStatus(ei, obs, "n1", now); st.NoRefSince != now.Format(time.RFC3339) {
		t.Errorf("unreadable noRefSince became %q, want now", st.NoRefSince)
	}
}

// TestEngineImageCleanup: an older engine image that no volume, engine or
// replica has used for 60 minutes is deleted; one still named by a volume's
// status.currentImage stays, and so does the default image, however long
// it has been unused; an image unused for less waits for the rest of the
// hour.
func TestEngineImageCleanup(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	old := func(image string, since time.Duration) *longhorn.EngineImage {
		return &longhorn.EngineImage{ObjectMeta: metav1.ObjectMeta{Name: types.EngineImageName(image), Namespace: testNS},
			Spec: longhorn.EngineImageSpec{Image: image}, Status: longhorn.EngineImageStatus{OwnerID: "n1", NoRefSince: t0.Add(-since).Format(time.RFC3339)}}
	}
	used := &longhorn.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: testNS},
		Spec: longhorn.VolumeSpec{Image: "longhorn:used"}, Status: longhorn.VolumeStatus{CurrentImage: "longhorn:used"}}
	objs := append(readyNode("n1"), old("longhorn:gone", 61*time.Minute), old("longhorn:used", 2*time.Hour),
		old("longhorn:recent", 10*time.Minute), old("longhorn:test", 3*time.Hour), used)
	f := newFixture(t, objs...)
	f.now = t0
	c := fixtureController[*EngineImageController](f)
	results := map[string]Result{}
	for _, img := range []string{"longhorn:gone", "longhorn:used", "longhorn:recent", "longhorn:test"} {
		res, err := c.syncEngineImage(f.ctx, testNS+"/"+types.EngineImageName(img))
		if err != nil {
			t.Fatalf("%s: %v", img, err)
		}
		results[img] = res
	}
	exists := func(img string) bool {
		_, err := f.lh.LonghornV1beta2().EngineImages(testNS).Get(f.ctx, types.EngineImageName(img), metav1.GetOptions{})
		return err == nil
	}
	if exists("longhorn:gone") {
		t.Error("the image unused for 61 min is still there")
	}
	for _, img := range []string{"longhorn:used", "longhorn:recent", "longhorn:test"} {
		if !exists(img) {
			t.Errorf("%s was deleted", img)
		}
	}
	if r := results["longhorn:recent"]; r.RequeueAfter != 50*time.Minute {
		t.Errorf("image unused for 10 min: requeue after %v, want 50m", r.RequeueAfter)
	}
	got, err := f.lh.LonghornV1beta2().EngineImages(testNS).Get(f.ctx, types.EngineImageName("longhorn:used"), metav1.GetOptions{})
	if err != nil || got.Status.RefCount != 1 || got.Status.NoRefSince != "" {
		t.Errorf("image of the volume's currentImage: %v %+v", err, got.Status)
	}
	if got, err := f.lh.LonghornV1beta2().EngineImages(testNS).Get(f.ctx, types.EngineImageName("longhorn:test"), metav1.GetOptions{}); err != nil ||
		got.Status.RefCount != 0 || got.Status.NoRefSince == "" {
		t.Errorf("default image: %v %+v", err, got.Status)
	}
}
