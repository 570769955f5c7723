package api

import (
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

func TestRootAndSchemas(t *testing.T) {
	e := newFakeEnv(t, Options{})
	var root struct {
		Type  string            `json:"type"`
		Links map[string]string `json:"links"`
	}
	if st := e.do("GET", "/v1", nil, &root); st != 200 || root.Links["volumes"] != e.srv.URL+"/v1/volumes" {
		t.Fatalf("GET /v1 = %d %+v", st, root)
	}
	var coll struct {
		Type, ResourceType string
		Data               []Schema
	}
	if st := e.do("GET", "/v1/schemas", nil, &coll); st != 200 || coll.Type != "collection" || coll.ResourceType != "schema" {
		t.Fatalf("GET /v1/schemas = %d %+v", st, coll)
	}
	var vol Schema
	if st := e.do("GET", "/v1/schemas/volume", nil, &vol); st != 200 {
		t.Fatalf("GET /v1/schemas/volume = %d", st)
	}
	if vol.ResourceActions[ActionAttach].Input != "attachInput" || vol.Links["collection"] != e.srv.URL+"/v1/volumes" ||
		vol.ResourceFields["numberOfReplicas"].Type != "int" || vol.ResourceFields["replicas"].Type != "array[replica]" ||
		!slices.Contains(vol.CollectionMethods, "POST") {
		t.Errorf("volume schema %+v", vol)
	}
	// Every action input named by a schema is itself a schema.
	ids := map[string]bool{}
	for _, s := range coll.Data {
		ids[s.ID] = true
	}
	for _, s := range coll.Data {
		for name, a := range s.ResourceActions {
			if (a.Input != "" && !ids[a.Input]) || (a.Output != "" && a.Output != "snapshotListOutput" && !ids[a.Output]) {
				t.Errorf("schema %s action %s names missing schema %+v", s.ID, name, a)
			}
		}
	}
	var apiErr Error
	if st := e.do("GET", "/v1/schemas/nope", nil, &apiErr); st != 404 || apiErr.Type != "error" || apiErr.Status != 404 || apiErr.Code != CodeNotFound {
		t.Errorf("unknown schema = %d %+v", st, apiErr)
	}
}

func TestSettings(t *testing.T) {
	e := newFakeEnv(t, Options{})
	var list struct {
		Data []Setting `json:"data"`
	}
	if st := e.do("GET", "/v1/settings", nil, &list); st != 200 || len(list.Data) != len(types.SettingDefinitions()) {
		t.Fatalf("GET /v1/settings = %d, %d settings", st, len(list.Data))
	}
	var s Setting
	var apiErr Error
	if st := e.do("GET", "/v1/settings/default-replica-count", nil, &s); st != 200 || s.Value != `{"v1":"3","v2":"3"}` ||
		s.Definition.Type != types.SettingTypeInt || s.Links["self"] != e.srv.URL+"/v1/settings/default-replica-count" {
		t.Fatalf("GET default-replica-count = %d %+v", st, s)
	}
	// A plain value of a per-data-engine setting is stored per engine, as Longhorn does.
	if st := e.do("PUT", "/v1/settings/default-replica-count", SettingInput{Value: "2"}, &s); st != 200 || s.Value != `{"v1":"2","v2":"2"}` {
		t.Fatalf("PUT default-replica-count=2 = %d %+v", st, s)
	}
	eventually(t, "setting in cache", func() bool {
		v, err := e.ds.GetSettingValue(t.Context(), types.SettingNameDefaultReplicaCount)
		return err == nil && v == `{"v1":"2","v2":"2"}`
	})
	if st := e.do("PUT", "/v1/settings/default-replica-count", SettingInput{Value: `{"v2":"10","v1":"5"}`}, &s); st != 200 || s.Value != `{"v1":"5","v2":"10"}` {
		t.Fatalf("PUT per engine = %d %+v", st, s)
	}
	if st := e.do("PUT", "/v1/settings/default-replica-count", SettingInput{Value: `{}`}, &apiErr); st != 422 ||
		!strings.Contains(apiErr.Message, "failed to set the setting default-replica-count with invalid value {}") {
		t.Errorf("PUT {} = %d %+v, want Longhorn's invalid value message", st, apiErr)
	}
	st := e.do("PUT", "/v1/settings/default-replica-count", SettingInput{Value: "21"}, &apiErr)
	if st != http.StatusUnprocessableEntity || !strings.Contains(apiErr.Message, "at most 20") || !strings.Contains(apiErr.Message, "default-replica-count") {
		t.Errorf("PUT 21 = %d %+v, want 422 naming the limit", st, apiErr)
	}
	st = e.do("PUT", "/v1/settings/node-down-pod-deletion-policy", SettingInput{Value: "delete-statefulset-pod"}, &apiErr)
	if st != http.StatusUnprocessableEntity || !strings.Contains(apiErr.Message, "node-down-pod-deletion-policy is not supported yet") {
		t.Errorf("PUT node-down-pod-deletion-policy=delete-statefulset-pod = %d %+v, want 422 not supported yet", st, apiErr)
	}
	if st := e.do("PUT", "/v1/settings/current-longhorn-version", SettingInput{Value: "v9"}, &apiErr); st != http.StatusForbidden {
		t.Errorf("PUT read-only = %d %+v", st, apiErr)
	}
	if st := e.do("PUT", "/v1/settings/no-such-setting", SettingInput{Value: "1"}, &apiErr); st != 404 {
		t.Errorf("PUT unknown = %d", st)
	}
	if st := e.do("PUT", "/v1/settings/auto-salvage", "not an object", &apiErr); st != 400 || apiErr.Code != CodeInvalidBody {
		t.Errorf("PUT bad body = %d %+v", st, apiErr)
	}
}

func TestVolumeCreateListDelete(t *testing.T) {
	e := newFakeEnv(t, Options{})
	var v Volume
	st := e.do("POST", "/v1/volumes", VolumeInput{Name: "vol1", Size: "1Gi", NumberOfReplicas: 2}, &v)
	if st != 200 || v.ID != "vol1" || v.Type != "volume" || v.Size != "1073741824" || v.NumberOfReplicas != 2 ||
		v.Frontend != longhorn.VolumeFrontendBlockDev || v.DataEngine != longhorn.DataEngineTypeV1 || v.DataLocality != "disabled" {
		t.Fatalf("POST = %d %+v", st, v)
	}
	if v.Actions[ActionAttach] != e.srv.URL+"/v1/volumes/vol1?action=attach" {
		t.Errorf("actions %v", v.Actions)
	}
	// Default replica count from the setting.
	if st := e.do("POST", "/v1/volumes", VolumeInput{Name: "vol2", Size: "2097152"}, &v); st != 200 || v.NumberOfReplicas != 3 {
		t.Fatalf("POST vol2 = %d replicas %d", st, v.NumberOfReplicas)
	}
	var list struct {
		Type, ResourceType string
		Data               []Volume
	}
	eventually(t, "two volumes listed", func() bool {
		return e.do("GET", "/v1/volumes", nil, &list) == 200 && len(list.Data) == 2
	})
	if list.Type != "collection" || list.ResourceType != "volume" || list.Data[0].ID != "vol1" {
		t.Errorf("list %+v", list)
	}
	bad := []struct {
		in   VolumeInput
		want string
	}{
		{VolumeInput{Name: "Bad_Name", Size: "1Gi"}, "name:"},
		{VolumeInput{Name: "v3", Size: "lots"}, "size:"},
		{VolumeInput{Name: "v3", Size: "-5"}, "greater than 0"},
		{VolumeInput{Name: "v3"}, "size: must be set"},
		{VolumeInput{Name: "v3", Size: "1.1"}, "not a whole number of bytes"},
		// One name limit and one message (the webhook's), at every length.
		{VolumeInput{Name: strings.Repeat("a", 41), Size: "1Gi"}, "is 41 characters; the limit is 40"},
		{VolumeInput{Name: strings.Repeat("a", 64), Size: "1Gi"}, "is 64 characters; the limit is 40"},
		{VolumeInput{Name: "v3", Size: "1Gi", NumberOfReplicas: 21}, "between 1 and 20"},
	}
	for _, c := range bad {
		var apiErr Error
		if st := e.do("POST", "/v1/volumes", c.in, &apiErr); st != 422 || !strings.Contains(apiErr.Message, c.want) {
			t.Errorf("POST %+v = %d %+v, want 422 %q", c.in, st, apiErr, c.want)
		}
	}
	var v15 Volume
	if st := e.do("POST", "/v1/volumes", VolumeInput{Name: "v15", Size: "1.5Gi"}, &v15); st != 200 || v15.Size != "1610612736" {
		t.Errorf("1.5Gi = %d size %q, want 200 and 1610612736", st, v15.Size)
	}
	var apiErr Error
	if st := e.do("POST", "/v1/volumes", VolumeInput{Name: "vol1", Size: "1Gi"}, &apiErr); st != 409 {
		t.Errorf("duplicate = %d %+v", st, apiErr)
	}
	if st := e.do("DELETE", "/v1/volumes/vol1", nil, nil); st != 204 {
		t.Errorf("DELETE = %d", st)
	}
	eventually(t, "vol1 gone", func() bool { return e.do("GET", "/v1/volumes/vol1", nil, &apiErr) == 404 })
	if apiErr.Type != "error" || apiErr.Code != CodeNotFound {
		t.Errorf("404 body %+v", apiErr)
	}
}

func TestVolumeActionsPerState(t *testing.T) {
	cases := []struct {
		state      longhorn.VolumeState
		robustness longhorn.VolumeRobustness
		has, not   []string
	}{
		{longhorn.VolumeStateDetached, longhorn.VolumeRobustnessUnknown, []string{ActionAttach, ActionDetach, ActionExpand}, []string{ActionSnapshotCreate, ActionSalvage}},
		{longhorn.VolumeStateDetached, longhorn.VolumeRobustnessFaulted, []string{ActionAttach, ActionSalvage}, []string{ActionExpand, ActionSnapshotCreate}},
		{longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, []string{ActionSnapshotCreate, ActionSnapshotRevert, ActionUpdateReplicaCount, ActionExpand}, []string{ActionSalvage}},
		{longhorn.VolumeStateAttaching, longhorn.VolumeRobustnessUnknown, []string{ActionAttach, ActionDetach}, []string{ActionExpand, ActionSnapshotList}},
	}
	for _, c := range cases {
		got := volumeActions(testVolume("v", c.state, c.robustness))
		for _, a := range c.has {
			if !slices.Contains(got, a) {
				t.Errorf("%s/%s lacks %s: %v", c.state, c.robustness, a, got)
			}
		}
		for _, a := range c.not {
			if slices.Contains(got, a) {
				t.Errorf("%s/%s offers %s: %v", c.state, c.robustness, a, got)
			}
		}
	}
}

func TestReadinessGate(t *testing.T) {
	var ready atomic.Bool
	e := newFakeEnv(t, Options{Ready: ready.Load})
	var apiErr Error
	if st := e.do("GET", "/v1/healthz", nil, nil); st != 200 {
		t.Errorf("healthz = %d", st)
	}
	if st := e.do("GET", "/v1/readyz", nil, nil); st != 503 {
		t.Errorf("readyz before ready = %d", st)
	}
	if st := e.do("GET", "/v1/volumes", nil, &apiErr); st != 503 || apiErr.Type != "error" {
		t.Errorf("volumes before ready = %d %+v", st, apiErr)
	}
	ready.Store(true)
	if st := e.do("GET", "/v1/readyz", nil, nil); st != 200 {
		t.Errorf("readyz when ready = %d", st)
	}
	if st := e.do("GET", "/v1/volumes", nil, nil); st != 200 {
		t.Errorf("volumes when ready = %d", st)
	}
}
