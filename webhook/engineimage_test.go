package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// fixedDefaults is an EngineImageStore with fixed default images.
type fixedDefaults []string

func (f fixedDefaults) DefaultEngineImages(context.Context) ([]string, error) { return f, nil }

// A kubectl delete of an EngineImage reaches the validator as a DELETE
// review with the stored object in oldObject: the default image and an
// image in use are refused naming the field, an unused older one passes;
// only DELETE is sent to the webhook, and the mutating configuration does
// not list engine images.
func TestValidateEngineImageDelete(t *testing.T) {
	reg := NewRegistry()
	Register(reg, EngineImageKind(fixedDefaults{"longhorn:new", "longhorn:new"}))
	review := func(image string, refCount int) *admissionv1.AdmissionResponse {
		ei := &longhorn.EngineImage{ObjectMeta: metav1.ObjectMeta{Name: "ei-x", Namespace: "longhorn-system"},
			Spec: longhorn.EngineImageSpec{Image: image}, Status: longhorn.EngineImageStatus{RefCount: refCount}}
		raw, err := json.Marshal(ei)
		if err != nil {
			t.Fatal(err)
		}
		return reg.Validate(context.Background(), &admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Name: "ei-x",
			Resource:  metav1.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "engineimages"},
			OldObject: runtime.RawExtension{Raw: raw}})
	}
	cases := []struct {
		image    string
		refCount int
		want     string // "" = allowed
	}{
		{"longhorn:old", 0, ""},
		{"longhorn:old", 2, "status.refCount: unable to delete the engine image longhorn:old while being used and refCount is 2"},
		{"longhorn:new", 0, "spec.image: unable to delete the default engine image longhorn:new"},
	}
	for _, c := range cases {
		resp := review(c.image, c.refCount)
		if c.want == "" {
			if !resp.Allowed {
				t.Errorf("%s refCount %d refused: %+v", c.image, c.refCount, resp.Result)
			}
			continue
		}
		if resp.Allowed || resp.Result.Code != 400 || !strings.Contains(resp.Result.Message, c.want) {
			t.Errorf("%s refCount %d: %+v, want 400 %q", c.image, c.refCount, resp.Result, c.want)
		}
	}
	rules := reg.rules(false)
	if len(rules) != 1 || len(rules[0].Operations) != 1 || rules[0].Operations[0] != admissionregv1.Delete || rules[0].Resources[0] != "engineimages" {
		t.Errorf("validating rules %+v", rules)
	}
	if m := reg.rules(true); len(m) != 0 {
		t.Errorf("mutating rules %+v", m)
	}
}
