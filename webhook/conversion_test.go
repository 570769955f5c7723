package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

const volumeJSON = `{"apiVersion":"%s","kind":"Volume","metadata":{"name":"v1","namespace":"longhorn-system"},` +
	`"spec":{"size":"1073741824","numberOfReplicas":3,"Standby":false}}`

// postConversion sends a ConversionReview through the webhook handler.
func postConversion(t *testing.T, desired string, objVersions ...string) (*apiextv1.ConversionReview, int) {
	t.Helper()
	req := &apiextv1.ConversionRequest{UID: k8stypes.UID("u-1"), DesiredAPIVersion: desired}
	for _, v := range objVersions {
		req.Objects = append(req.Objects, runtime.RawExtension{Raw: []byte(strings.Replace(volumeJSON, "%s", v, 1))})
	}
	body, err := json.Marshal(&apiextv1.ConversionReview{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"}, Request: req})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	NewRegistry().Handler(context.Background()).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ConversionPath, bytes.NewReader(body)))
	var out apiextv1.ConversionReview
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
	}
	return &out, rec.Code
}

func TestConversionReview(t *testing.T) {
	out, code := postConversion(t, "longhorn.io/v1beta2", "longhorn.io/v1beta2", "longhorn.io/v1beta2")
	if code != http.StatusOK || out.Response == nil || out.Response.UID != "u-1" || out.Response.Result.Status != metav1.StatusSuccess {
		t.Fatalf("v1beta2 -> v1beta2: code %d response %+v", code, out.Response)
	}
	if out.Kind != "ConversionReview" || out.Request != nil || len(out.Response.ConvertedObjects) != 2 {
		t.Fatalf("review %+v", out)
	}
	want := strings.Replace(volumeJSON, "%s", "longhorn.io/v1beta2", 1)
	if got := string(out.Response.ConvertedObjects[0].Raw); got != want {
		t.Errorf("converted object %s, want it unchanged %s", got, want)
	}
	for _, c := range []struct{ desired, from, msg string }{
		{"longhorn.io/v1beta1", "longhorn.io/v1beta2", "conversion to longhorn.io/v1beta1 is not supported"},
		{"longhorn.io/v1beta2", "longhorn.io/v1beta1", "conversion from longhorn.io/v1beta1 is not supported"},
	} {
		out, code := postConversion(t, c.desired, c.from)
		if code != http.StatusOK || out.Response.Result.Status != metav1.StatusFailure || !strings.Contains(out.Response.Result.Message, c.msg) ||
			len(out.Response.ConvertedObjects) != 0 || out.Response.UID != "u-1" {
			t.Errorf("%s -> %s: code %d response %+v", c.from, c.desired, code, out.Response)
		}
	}
	rec := httptest.NewRecorder()
	NewRegistry().Handler(context.Background()).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ConversionPath, strings.NewReader("{}")))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("a review without a request: %d", rec.Code)
	}
}
