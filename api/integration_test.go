package api

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
)

// newKubeEnv serves the API over a datastore on the real API server.
func newKubeEnv(t *testing.T) *apiEnv {
	t.Helper()
	kubeEnv.Require(t)
	kube, err := kubernetes.NewForConfig(kubeEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	lh, err := versioned.NewForConfig(kubeEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, lh, Options{})
}

// TestAgainstAPIServer drives the API against a real kube-apiserver: a
// volume created by POST is stored and listed, attach writes the
// longhorn-api ticket into the VolumeAttachment, detach removes it, and a
// setting PUT outside its range is refused with the limit in the message.
func TestAgainstAPIServer(t *testing.T) {
	e := newKubeEnv(t)
	ctx := t.Context()
	if _, err := e.client.LonghornV1beta2().Nodes(ns).Create(ctx, testNode("node-1"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var v Volume
	if st := e.do("POST", "/v1/volumes", VolumeInput{Name: "itest", Size: "64Mi", NumberOfReplicas: 2}, &v); st != 200 {
		t.Fatalf("POST /v1/volumes = %d %+v", st, v)
	}
	stored, err := e.client.LonghornV1beta2().Volumes(ns).Get(ctx, "itest", metav1.GetOptions{})
	if err != nil || stored.Spec.Size != 64<<20 || stored.Spec.NumberOfReplicas != 2 || stored.Spec.Frontend != longhorn.VolumeFrontendBlockDev {
		t.Fatalf("stored volume %+v (%v)", stored.Spec, err)
	}
	var list struct{ Data []Volume }
	eventually(t, "volume listed", func() bool {
		return e.do("GET", "/v1/volumes", nil, &list) == 200 && len(list.Data) == 1 && list.Data[0].Name == "itest"
	})
	// No controller runs here, so the volume has no state; attach is offered in every state.
	if st := e.do("POST", "/v1/volumes/itest?action=attach", AttachInput{HostID: "node-1"}, &v); st != 200 {
		t.Fatalf("attach = %d", st)
	}
	va, err := e.client.LonghornV1beta2().VolumeAttachments(ns).Get(ctx, "itest", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tk := va.Spec.AttachmentTickets["longhorn-api-node-1"]
	if tk == nil || tk.NodeID != "node-1" || tk.Type != longhorn.AttacherTypeLonghornAPI || va.Spec.Volume != "itest" {
		t.Fatalf("attachment %+v", va.Spec)
	}
	eventually(t, "attachment in the volume resource", func() bool {
		return e.do("GET", "/v1/volumes/itest", nil, &v) == 200 &&
			v.VolumeAttachment.Attachments["longhorn-api-node-1"].NodeID == "node-1"
	})
	if st := e.do("POST", "/v1/volumes/itest?action=detach", DetachInput{HostID: "node-1"}, &v); st != 200 {
		t.Fatalf("detach = %d", st)
	}
	va, err = e.client.LonghornV1beta2().VolumeAttachments(ns).Get(ctx, "itest", metav1.GetOptions{})
	if err != nil || len(va.Spec.AttachmentTickets) != 0 {
		t.Fatalf("tickets after detach %v (%v)", va.Spec.AttachmentTickets, err)
	}

	var apiErr Error
	st := e.do("PUT", "/v1/settings/storage-minimal-available-percentage", SettingInput{Value: "101"}, &apiErr)
	if st != 422 || !strings.Contains(apiErr.Message, "at most 100") {
		t.Errorf("PUT 101 = %d %+v, want 422 naming the limit 100", st, apiErr)
	}
	var s Setting
	if st := e.do("PUT", "/v1/settings/storage-minimal-available-percentage", SettingInput{Value: "10"}, &s); st != 200 || s.Value != "10" {
		t.Fatalf("PUT 10 = %d %+v", st, s)
	}
	obj, err := e.client.LonghornV1beta2().Settings(ns).Get(ctx, "storage-minimal-available-percentage", metav1.GetOptions{})
	if err != nil || obj.Value != "10" {
		t.Errorf("stored setting %v (%v)", obj, err)
	}
	if st := e.do("DELETE", "/v1/volumes/itest", nil, nil); st != 204 {
		t.Errorf("DELETE = %d", st)
	}
}
