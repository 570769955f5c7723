package api

import (
	"strings"
	"testing"

	"github.com/longhorn-go/longhorn/types"
)

func TestLimitAnnotations(t *testing.T) {
	a, err := limitAnnotations(map[string]string{"instanceMemoryLimit": "64Mi"})
	if err != nil || len(a) != 1 || a[types.AnnotationInstanceMemoryLimit] != "64Mi" {
		t.Fatalf("= %v, %v", a, err)
	}
	if a, err := limitAnnotations(nil); err != nil || a != nil {
		t.Fatalf("none: %v, %v", a, err)
	}
	if _, err := limitAnnotations(map[string]string{"cpu": "1"}); err == nil || !strings.Contains(err.Error(), "resourceLimits.cpu") {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := limitAnnotations(map[string]string{"replicaReadIOPSLimit": "1"}); err == nil || !strings.Contains(err.Error(), "below the smallest limit 10") {
		t.Fatalf("bad value: %v", err)
	}
}
