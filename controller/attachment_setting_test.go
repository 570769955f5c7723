package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/meta"
	"github.com/longhorn-go/longhorn/types"
)

func TestVolumeAttachmentTicketSetsNode(t *testing.T) {
	v := newVolume("vol", 1)
	v.Status.OwnerID, v.Status.State = "n1", longhorn.VolumeStateDetached
	va := &longhorn.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "vol", Namespace: testNS},
		Spec: longhorn.VolumeAttachmentSpec{Volume: "vol", AttachmentTickets: map[string]*longhorn.AttachmentTicket{
			"longhorn-api-t1": {ID: "longhorn-api-t1", Type: longhorn.AttacherTypeLonghornAPI, NodeID: "n1", Generation: 3,
				Parameters: map[string]string{"disableFrontend": "false", "lastAttachedBy": "me"}},
		}}}
	f := newFixture(t, append(threeNodeObjects(), v, va)...)
	c := fixtureController[*VolumeAttachmentController](f)
	f.settle()
	if _, err := c.syncVolumeAttachment(f.ctx, testNS+"/vol"); err != nil {
		t.Fatal(err)
	}
	got := f.volume("vol")
	if got.Spec.NodeID != "n1" || got.Spec.LastAttachedBy != "me" || got.Spec.DisableFrontend {
		t.Fatalf("volume spec after ticket: %+v", got.Spec)
	}
	st, _ := f.lh.LonghornV1beta2().VolumeAttachments(testNS).Get(f.ctx, "vol", metav1.GetOptions{})
	if s := st.Status.AttachmentTicketStatuses["longhorn-api-t1"]; s == nil || s.Satisfied || s.Generation != 3 {
		t.Fatalf("ticket status before attach: %+v", s)
	}
	// Attached: the ticket is satisfied.
	got.Status.State, got.Status.CurrentNodeID = longhorn.VolumeStateAttached, "n1"
	f.updateVolume(got)
	f.settle()
	if _, err := c.syncVolumeAttachment(f.ctx, testNS+"/vol"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		st, _ = f.lh.LonghornV1beta2().VolumeAttachments(testNS).Get(f.ctx, "vol", metav1.GetOptions{})
		s := st.Status.AttachmentTicketStatuses["longhorn-api-t1"]
		return s != nil && s.Satisfied && longhorn.IsAttachmentTicketSatisfied("longhorn-api-t1", st)
	})
	// Ticket removed: detach.
	st.Spec.AttachmentTickets = nil
	if _, err := f.lh.LonghornV1beta2().VolumeAttachments(testNS).Update(f.ctx, st, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		a, err := f.ds.GetVolumeAttachmentRO(f.ctx, "vol")
		return err == nil && len(a.Spec.AttachmentTickets) == 0
	})
	if _, err := c.syncVolumeAttachment(f.ctx, testNS+"/vol"); err != nil {
		t.Fatal(err)
	}
	if f.volume("vol").Spec.NodeID != "" {
		t.Fatal("volume not detached after the last ticket went away")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met in 5 s")
}

func TestSettingDefaultsFromConfigMap(t *testing.T) {
	// The fake clientset's watch channels hold 100 events, so most settings
	// exist already; applyDefaults must create the missing ones.
	var objs []runtime.Object
	for _, n := range types.SettingNameList() {
		switch n {
		case types.SettingNameDefaultReplicaCount, types.SettingNameStorageMinimalAvailablePercentage, types.SettingNameDefaultEngineImage:
		case types.SettingNameStorageOverProvisioningPercentage:
			objs = append(objs, setting(n, "120"))
		default:
			def, _ := types.GetSettingDefinition(n)
			objs = append(objs, setting(n, def.Default))
		}
	}
	f := newFixture(t, objs...)
	if _, err := f.kube.CoreV1().ConfigMaps(testNS).Create(f.ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultSettingConfigMapName, Namespace: testNS, ResourceVersion: "7"},
		Data: map[string]string{DefaultSettingConfigMapKey: "default-replica-count: '2'\nstorage-over-provisioning-percentage: 150\n" +
			"storage-minimal-available-percentage: 101\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := f.m.env.configMaps.ConfigMaps(testNS).Get(DefaultSettingConfigMapName)
		return err == nil
	})
	c := fixtureController[*SettingController](f)
	if _, err := c.syncSetting(f.ctx, configMapKey); err != nil {
		t.Fatal(err)
	}
	get := func(n types.SettingName) *longhorn.Setting {
		s, err := f.lh.LonghornV1beta2().Settings(testNS).Get(f.ctx, string(n), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := get(types.SettingNameDefaultReplicaCount); s.Value != "2" || s.Annotations[configMapRVAnnotation] != "7" {
		t.Fatalf("default-replica-count %+v", s)
	}
	if s := get(types.SettingNameStorageOverProvisioningPercentage); s.Value != "150" {
		t.Fatalf("existing setting not overwritten by a new ConfigMap version: %q", s.Value)
	}
	if s := get(types.SettingNameStorageMinimalAvailablePercentage); s.Value != "25" {
		t.Fatalf("invalid ConfigMap value applied: %q", s.Value)
	}
	if s := get(types.SettingNameDefaultEngineImage); s.Value != "longhorn:test" {
		t.Fatalf("default-engine-image %q", s.Value)
	}
	if s := get(types.SettingNameCurrentLonghornVersion); s.Value != meta.Version {
		t.Fatalf("current-longhorn-version %q, want the manager's version %q", s.Value, meta.Version)
	}
	all, _ := f.lh.LonghornV1beta2().Settings(testNS).List(f.ctx, metav1.ListOptions{})
	if len(all.Items) != len(types.SettingNameList()) {
		t.Fatalf("%d settings created, want %d", len(all.Items), len(types.SettingNameList()))
	}
	// A user edit after the ConfigMap was applied survives another sync.
	s := get(types.SettingNameDefaultReplicaCount)
	s.Value = "3"
	if _, err := f.lh.LonghornV1beta2().Settings(testNS).Update(f.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		c, err := f.ds.GetSettingRO(f.ctx, types.SettingNameDefaultReplicaCount)
		return err == nil && c.Value == "3"
	})
	if _, err := c.syncSetting(f.ctx, configMapKey); err != nil {
		t.Fatal(err)
	}
	if v := get(types.SettingNameDefaultReplicaCount).Value; v != "3" {
		t.Fatalf("user edit overwritten by the same ConfigMap version: %q", v)
	}
}

// A setting the API server refuses (here storage-network, as the webhook
// does while volumes are attached) does not block the settings after it:
// they are applied, the refusal is reported on the ConfigMap, and the sync
// returns an error so the refused one is retried.
func TestDefaultSettingRefusedDoesNotBlockOthers(t *testing.T) {
	var objs []runtime.Object
	for _, n := range types.SettingNameList() {
		def, _ := types.GetSettingDefinition(n)
		objs = append(objs, setting(n, def.Default))
	}
	f := newFixture(t, objs...)
	f.lh.PrependReactor("update", "settings", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if s := a.(k8stesting.UpdateAction).GetObject().(*longhorn.Setting); s.Name == string(types.SettingNameStorageNetwork) {
			return true, nil, apierrors.NewForbidden(longhorn.Resource("settings"), s.Name,
				errors.New("cannot change storage-network while volumes are attached"))
		}
		return false, nil, nil
	})
	if _, err := f.kube.CoreV1().ConfigMaps(testNS).Create(f.ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultSettingConfigMapName, Namespace: testNS, ResourceVersion: "8"},
		Data: map[string]string{DefaultSettingConfigMapKey: "storage-network: kube-system/storage\n" +
			"storage-over-provisioning-percentage: 150\nsystem-managed-pods-image-pull-policy: always\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := f.m.env.configMaps.ConfigMaps(testNS).Get(DefaultSettingConfigMapName)
		return err == nil
	})
	_, err := fixtureController[*SettingController](f).syncSetting(f.ctx, configMapKey)
	if err == nil || !strings.Contains(err.Error(), "storage-network") {
		t.Fatalf("sync error %v, want the storage-network refusal", err)
	}
	for n, want := range map[types.SettingName]string{
		types.SettingNameStorageOverProvisioningPercentage: "150", // sorts after storage-network
		types.SettingNameSystemManagedPodsImagePullPolicy:  "always",
		types.SettingNameStorageNetwork:                    "",
	} {
		s, err := f.lh.LonghornV1beta2().Settings(testNS).Get(f.ctx, string(n), metav1.GetOptions{})
		if err != nil || s.Value != want {
			t.Errorf("%s = %q (%v), want %q", n, s.Value, err, want)
		}
	}
	if ev := f.events(); !hasEvent(ev, "Warning FailedApplyingDefaultSetting update setting storage-network") {
		t.Errorf("events %q", ev)
	}
}
