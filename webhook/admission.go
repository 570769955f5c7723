// Package webhook is the manager's admission webhook: validation and
// mutation of Longhorn objects, served over TLS by every manager with a
// self-managed CA (Secret longhorn-webhook-ca) whose certificate the manager
// patches into the ValidatingWebhookConfiguration longhorn-webhook-validator
// and the MutatingWebhookConfiguration longhorn-webhook-mutator, as Longhorn
// does (webhook names validator.longhorn.io and mutator.longhorn.io, paths
// /v1/webhook/validation and /v1/webhook/mutation, port 9502).
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Paths served.
const (
	ValidationPath = "/v1/webhook/validation"
	MutationPath   = "/v1/webhook/mutation"
	HealthPath     = "/v1/healthz"
)

// maxReviewBytes bounds an AdmissionReview body (objects are limited to
// about 1.5 MiB by etcd; leave room for oldObject).
const maxReviewBytes = 7 << 20

// FieldError is a rejection that names the offending field. Its message
// reaches the user through kubectl as
// `admission webhook "validator.longhorn.io" denied the request: <field>: <msg>`.
type FieldError struct {
	Field string // JSON path, e.g. "spec.numberOfReplicas"
	Msg   string // what is wrong and the limit
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Invalid returns a *FieldError for field with a formatted message.
func Invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// PatchOp is one JSON Patch (RFC 6902) operation.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Request is a decoded admission request for one kind.
type Request[T runtime.Object] struct {
	Operation admissionv1.Operation
	Name      string
	Namespace string
	// Object is the new object (nil on DELETE); Old is the stored one (nil
	// on CREATE).
	Object T
	Old    T
	HasOld bool
	HasNew bool
	// UserName is the requesting user (controllers' own service account vs
	// a person).
	UserName string
}

// Kind registers the admission behaviour of one resource.
type Kind[T runtime.Object] struct {
	// Resource is the plural resource name ("volumes").
	Resource string
	// New returns an empty object to decode into.
	New func() T
	// Operations the webhook configurations send for this resource.
	Operations []admissionregv1.OperationType
	// Validate rejects an invalid request with a *FieldError (any other
	// error is an internal failure, HTTP 500). Nil: no validation.
	Validate func(ctx context.Context, req Request[T]) error
	// Mutate returns the patch to apply before validation. Nil: none.
	Mutate func(ctx context.Context, req Request[T]) ([]PatchOp, error)
	// Prepare, when set, rewrites the raw new object before it is decoded
	// (e.g. a quantity "1Gi" into the byte string an int64 field needs) and
	// returns the patch that makes the same change for the mutating webhook.
	Prepare func(raw []byte) ([]byte, []PatchOp, error)
}

// handler is the type-erased form of a Kind.
type handler struct {
	resource   string
	operations []admissionregv1.OperationType
	validates  bool
	mutates    bool
	validate   func(ctx context.Context, ar *admissionv1.AdmissionRequest) error
	mutate     func(ctx context.Context, ar *admissionv1.AdmissionRequest) ([]PatchOp, error)
}

// Registry maps resources to their admission handlers.
type Registry struct {
	handlers map[string]*handler
	// Ready, when set, makes HealthPath answer 503 while it returns false
	// (the manager's readiness: caches synced, controllers running).
	Ready func() bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{handlers: map[string]*handler{}} }

// Register adds a kind to the registry.
func Register[T runtime.Object](r *Registry, k Kind[T]) {
	decode := func(ar *admissionv1.AdmissionRequest) (Request[T], []PatchOp, error) {
		req := Request[T]{Operation: ar.Operation, Name: ar.Name, Namespace: ar.Namespace, UserName: ar.UserInfo.Username}
		var prep []PatchOp
		if len(ar.Object.Raw) > 0 {
			raw := ar.Object.Raw
			if k.Prepare != nil {
				var err error
				if raw, prep, err = k.Prepare(raw); err != nil {
					return req, nil, err
				}
			}
			req.Object, req.HasNew = k.New(), true
			if err := json.Unmarshal(raw, req.Object); err != nil {
				return req, nil, Invalid("object", "cannot decode %s: %v", k.Resource, err)
			}
		}
		if len(ar.OldObject.Raw) > 0 {
			req.Old, req.HasOld = k.New(), true
			if err := json.Unmarshal(ar.OldObject.Raw, req.Old); err != nil {
				return req, nil, fmt.Errorf("cannot decode stored %s: %w", k.Resource, err)
			}
		}
		return req, prep, nil
	}
	h := &handler{resource: k.Resource, operations: k.Operations, validates: k.Validate != nil, mutates: k.Mutate != nil || k.Prepare != nil}
	h.validate = func(ctx context.Context, ar *admissionv1.AdmissionRequest) error {
		req, _, err := decode(ar)
		if err != nil || k.Validate == nil {
			return err
		}
		return k.Validate(ctx, req)
	}
	h.mutate = func(ctx context.Context, ar *admissionv1.AdmissionRequest) ([]PatchOp, error) {
		req, prep, err := decode(ar)
		if err != nil || k.Mutate == nil {
			return prep, err
		}
		ops, err := k.Mutate(ctx, req)
		return append(prep, ops...), err
	}
	r.handlers[k.Resource] = h
}

// review decodes an AdmissionReview, runs fn and writes the response.
func review(w http.ResponseWriter, r *http.Request, fn func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var ar admissionv1.AdmissionReview
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReviewBytes)).Decode(&ar); err != nil {
		http.Error(w, "cannot decode AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	if ar.Request == nil {
		http.Error(w, "AdmissionReview has no request", http.StatusBadRequest)
		return
	}
	resp := fn(ar.Request)
	resp.UID = ar.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: ar.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion, out.Kind = "admission.k8s.io/v1", "AdmissionReview"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&out)
}

// denied turns an error into a refusal: 400 for a FieldError, 500 otherwise.
func denied(err error) *admissionv1.AdmissionResponse {
	code := int32(http.StatusInternalServerError)
	var fe *FieldError
	if errors.As(err, &fe) {
		code = http.StatusBadRequest
	}
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Message: err.Error(),
		Reason: metav1.StatusReason(http.StatusText(int(code))),
	}}
}

// Validate handles one validation request.
func (reg *Registry) Validate(ctx context.Context, ar *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	h, ok := reg.handlers[ar.Resource.Resource]
	if !ok || !h.validates || ar.SubResource != "" {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	if err := h.validate(ctx, ar); err != nil {
		return denied(err)
	}
	return &admissionv1.AdmissionResponse{Allowed: true}
}

// Mutate handles one mutation request.
func (reg *Registry) Mutate(ctx context.Context, ar *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	h, ok := reg.handlers[ar.Resource.Resource]
	if !ok || !h.mutates || ar.SubResource != "" {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	ops, err := h.mutate(ctx, ar)
	if err != nil {
		return denied(err)
	}
	resp := &admissionv1.AdmissionResponse{Allowed: true}
	if len(ops) > 0 {
		b, err := json.Marshal(ops)
		if err != nil {
			return denied(err)
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = b, &pt
	}
	return resp
}

// Handler returns the HTTP handler serving validation, mutation, conversion
// and health.
func (reg *Registry) Handler(ctx context.Context) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(ConversionPath, serveConversion)
	mux.HandleFunc(ValidationPath, func(w http.ResponseWriter, r *http.Request) {
		review(w, r, func(ar *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse { return reg.Validate(ctx, ar) })
	})
	mux.HandleFunc(MutationPath, func(w http.ResponseWriter, r *http.Request) {
		review(w, r, func(ar *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse { return reg.Mutate(ctx, ar) })
	})
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		if reg.Ready != nil && !reg.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}
