package api

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// DELETE /v1/engineimages/<name>: the default image and an image in use
// answer 409 with Longhorn's reason; an unused older image is deleted (204).
func TestDeleteEngineImage(t *testing.T) {
	ei := func(image string, refCount int) *longhorn.EngineImage {
		return &longhorn.EngineImage{ObjectMeta: metav1.ObjectMeta{Name: types.EngineImageName(image), Namespace: ns},
			Spec: longhorn.EngineImageSpec{Image: image}, Status: longhorn.EngineImageStatus{RefCount: refCount}}
	}
	e := newFakeEnv(t, Options{EngineImage: "longhorn:new"}, ei("longhorn:new", 0), ei("longhorn:used", 3), ei("longhorn:old", 0))
	for _, c := range []struct {
		image string
		code  int
		msg   string
	}{
		{"longhorn:new", 409, "unable to delete the default engine image longhorn:new"},
		{"longhorn:used", 409, "unable to delete the engine image longhorn:used while being used and refCount is 3"},
		{"longhorn:old", 204, ""},
	} {
		var apiErr Error
		st := e.do("DELETE", "/v1/engineimages/"+types.EngineImageName(c.image), nil, &apiErr)
		if st != c.code || !strings.Contains(apiErr.Message, c.msg) {
			t.Errorf("delete %s = %d %q, want %d %q", c.image, st, apiErr.Message, c.code, c.msg)
		}
		_, err := e.client.LonghornV1beta2().EngineImages(ns).Get(t.Context(), types.EngineImageName(c.image), metav1.GetOptions{})
		if gone := err != nil; gone != (c.code == 204) {
			t.Errorf("%s after delete: %v", c.image, err)
		}
	}
}
