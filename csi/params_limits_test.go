package csi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestResourceLimitParameters(t *testing.T) {
	o, err := parseParameters(map[string]string{"instanceCPULimit": "500m", "replicaReadBandwidthLimit": "20Mi", "numberOfReplicas": "1"})
	if err != nil || o.create.ResourceLimits["instanceCPULimit"] != "500m" || o.create.ResourceLimits["replicaReadBandwidthLimit"] != "20Mi" {
		t.Fatalf("= %+v, %v", o.create.ResourceLimits, err)
	}
	b, _ := json.Marshal(o.create)
	if !strings.Contains(string(b), `"resourceLimits":{"instanceCPULimit":"500m","replicaReadBandwidthLimit":"20Mi"}`) {
		t.Fatalf("REST body %s", b)
	}
	_, err = parseParameters(map[string]string{"replicaReadIOPSLimit": "lots"})
	if err == nil || !strings.Contains(err.Error(), `StorageClass parameter replicaReadIOPSLimit="lots"`) || !strings.Contains(err.Error(), "not a quantity") {
		t.Fatalf("bad limit: %v", err)
	}
	if o, err := parseParameters(map[string]string{"instanceMemoryLimit": ""}); err != nil || o.create.ResourceLimits != nil {
		t.Fatalf("empty limit: %+v, %v", o.create.ResourceLimits, err)
	}
}
