package webhook

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// ConversionPath is where the conversion webhook answers ConversionReviews
// (Longhorn's /v1/webhook/conversion, Service longhorn-conversion-webhook,
// port 9501).
const ConversionPath = "/v1/webhook/conversion"

// Convert answers one conversion request. The product serves one version of
// longhorn.io, v1beta2 (as Longhorn since v1.10.0, which dropped v1beta1):
// an object already at the desired version is returned as it is, with its
// apiVersion stated; a request for or from any other version fails with a
// message naming it, and no object is converted.
func Convert(req *apiextv1.ConversionRequest) *apiextv1.ConversionResponse {
	resp := &apiextv1.ConversionResponse{UID: req.UID}
	want := longhorn.SchemeGroupVersion.String()
	if req.DesiredAPIVersion != want {
		resp.Result = conversionFailure("conversion to %s is not supported: longhorn.io serves only %s", req.DesiredAPIVersion, want)
		return resp
	}
	for i, obj := range req.Objects {
		var m map[string]any
		if err := json.Unmarshal(obj.Raw, &m); err != nil {
			resp.Result = conversionFailure("object %d is not a JSON object: %v", i, err)
			resp.ConvertedObjects = nil
			return resp
		}
		if v, _ := m["apiVersion"].(string); v != want {
			resp.Result = conversionFailure("conversion from %s is not supported: longhorn.io serves only %s", v, want)
			resp.ConvertedObjects = nil
			return resp
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: obj.Raw})
	}
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp
}

func conversionFailure(format string, args ...any) metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Message: fmt.Sprintf(format, args...)}
}

// serveConversion decodes a ConversionReview, answers it with Convert and
// writes it back (the response's apiVersion and kind are the request's).
func serveConversion(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a ConversionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var review apiextv1.ConversionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not a ConversionReview with a request: %v", err), http.StatusBadRequest)
		return
	}
	review.Response = Convert(review.Request)
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}
