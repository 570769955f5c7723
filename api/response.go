package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/longhorn-go/longhorn/types"
)

// maxBodyBytes bounds a request body (inputs are small JSON objects).
const maxBodyBytes = 1 << 20

// Error is the gdapi error body.
type Error struct {
	Type    string `json:"type"`
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes (gdapi style).
const (
	CodeNotFound         = "NotFound"
	CodeInvalidBody      = "InvalidBodyContent"
	CodeInvalidInput     = "InvalidInput"
	CodeInvalidAction    = "InvalidAction"
	CodeInvalidState     = "InvalidState"
	CodeConflict         = "Conflict"
	CodeForbidden        = "Forbidden"
	CodeMethodNotAllowed = "MethodNotAllowed"
	CodeNotSupported     = "NotSupported"
	CodeServerError      = "ServerError"
)

// httpError is an error with the status and code the client gets.
type httpError struct {
	status int
	code   string
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func newError(status int, code, format string, args ...any) error {
	return &httpError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

// invalidInput is a 422 naming the field and what is wrong with it.
func invalidInput(field, format string, args ...any) error {
	return newError(http.StatusUnprocessableEntity, CodeInvalidInput, "%s: %s", field, fmt.Sprintf(format, args...))
}

// unknownAction is a 400 for an action name the resource does not have;
// the message lists the ones it has.
func unknownAction(kind, action string, known []string) error {
	if action == "" {
		return newError(http.StatusBadRequest, CodeInvalidAction, "%s: the action query parameter is required (?action=one of %s)", kind, strings.Join(known, ", "))
	}
	return newError(http.StatusBadRequest, CodeInvalidAction, "%s action %q is not one of %s", kind, action, strings.Join(known, ", "))
}

// invalidState is a 409 for an action the object's state does not allow.
func invalidState(format string, args ...any) error {
	return newError(http.StatusConflict, CodeInvalidState, format, args...)
}

// toAPIError maps an error to the status and code the client sees:
// *httpError as given; setting validation 422; API server NotFound 404,
// Conflict/AlreadyExists 409, Invalid/BadRequest 422 (admission rejections
// carry the webhook's field message), Forbidden 403; anything else 500.
func toAPIError(err error) *Error {
	var he *httpError
	var sv *types.SettingValueError
	switch {
	case errors.As(err, &he):
		return &Error{Type: "error", Status: he.status, Code: he.code, Message: he.msg}
	case errors.As(err, &sv), errors.Is(err, types.ErrUnknownSetting):
		return &Error{Type: "error", Status: http.StatusUnprocessableEntity, Code: CodeInvalidInput, Message: err.Error()}
	case apierrors.IsNotFound(err):
		return &Error{Type: "error", Status: http.StatusNotFound, Code: CodeNotFound, Message: err.Error()}
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return &Error{Type: "error", Status: http.StatusConflict, Code: CodeConflict, Message: err.Error()}
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return &Error{Type: "error", Status: http.StatusUnprocessableEntity, Code: CodeInvalidInput, Message: err.Error()}
	case apierrors.IsForbidden(err):
		return &Error{Type: "error", Status: http.StatusForbidden, Code: CodeForbidden, Message: err.Error()}
	}
	return &Error{Type: "error", Status: http.StatusInternalServerError, Code: CodeServerError, Message: err.Error()}
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing to do
}

func writeError(w http.ResponseWriter, err error) {
	e := toAPIError(err)
	writeJSON(w, e.Status, e)
}

// decodeBody decodes a JSON object body into v; an empty body leaves v as
// is. Unknown fields are ignored (the UI and clients send extra fields).
// Errors are 400 naming the problem.
func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return newError(http.StatusBadRequest, CodeInvalidBody, "reading body: %v", err)
	}
	if len(body) > maxBodyBytes {
		return newError(http.StatusRequestEntityTooLarge, CodeInvalidBody, "body larger than %d bytes", maxBodyBytes)
	}
	if strings.TrimSpace(string(body)) == "" {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return newError(http.StatusBadRequest, CodeInvalidBody, "body is not the expected JSON object: %v", err)
	}
	return nil
}

// baseURL returns "<scheme>://<host>" of the request, honouring
// X-Forwarded-Proto, X-Forwarded-Host and X-Forwarded-Port (the first value
// of each; ports 80 and 443 are left out) as Longhorn's API (go-rancher's
// URL builder) does behind the UI's proxy.
func baseURL(r *http.Request) string {
	first := func(h string) string { v, _, _ := strings.Cut(r.Header.Get(h), ","); return strings.TrimSpace(v) }
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := first("X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	host := r.Host
	if h := first("X-Forwarded-Host"); h != "" && !strings.ContainsAny(h, "/ \t@?#") {
		host = h
	}
	if p := first("X-Forwarded-Port"); p != "" {
		host = withForwardedPort(host, p)
	}
	return scheme + "://" + host
}

// withForwardedPort replaces host's port by an X-Forwarded-Port p (1-65535;
// 80 and 443 are left out); another p leaves host as it is.
func withForwardedPort(host, p string) string {
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || n >= 65536 {
		return host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if n != 80 && n != 443 {
		host += ":" + p
	}
	return host
}
