package api

import (
	"net/url"
	"reflect"
	"sort"
	"time"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Resource is the part every gdapi resource has.
type Resource struct {
	ID      string            `json:"id"`
	Type    string            `json:"type"`
	Links   map[string]string `json:"links"`
	Actions map[string]string `json:"actions"`
}

// resourceID lets generic helpers sort any resource by ID.
func (r Resource) resourceID() string { return r.ID }

// Collection is a gdapi collection of one resource type. Data is never
// null: an empty collection has "data": [].
type Collection struct {
	Type         string            `json:"type"`
	ResourceType string            `json:"resourceType"`
	Links        map[string]string `json:"links"`
	CreateTypes  map[string]string `json:"createTypes"`
	Actions      map[string]string `json:"actions"`
	Data         any               `json:"data"`
}

// urls builds resource and action URLs under <base>/v1; path is the
// request path.
type urls struct{ base, path string }

func (u urls) collection(coll string) string { return u.base + "/v1/" + coll }

func (u urls) resource(coll, id string) string { return u.collection(coll) + "/" + url.PathEscape(id) }

// newResource returns the common fields with links.self and one action URL
// per name in actions.
func (u urls) newResource(typ, coll, id string, actions ...string) Resource {
	self := u.resource(coll, id)
	acts := make(map[string]string, len(actions))
	for _, a := range actions {
		acts[a] = self + "?action=" + a
	}
	return Resource{ID: id, Type: typ, Links: map[string]string{"self": self}, Actions: acts}
}

// newCollection wraps data (a slice; nil becomes []) as a collection of typ
// at /v1/<coll>.
func (u urls) newCollection(typ, coll string, data any) Collection {
	if data == nil || reflect.ValueOf(data).IsNil() {
		data = []any{}
	}
	return Collection{Type: "collection", ResourceType: typ, Links: map[string]string{"self": u.collection(coll)},
		CreateTypes: map[string]string{}, Actions: map[string]string{}, Data: data}
}

// sortResources orders resources by ID so lists are stable (WebSocket
// streams compare successive lists) and returns a non-nil slice.
func sortResources[T interface{ resourceID() string }](items []T) []T {
	if items == nil {
		return []T{}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].resourceID() < items[j].resourceID() })
	return items
}

// toResources turns objs into resources with res, sorted by ID.
func toResources[O any, T interface{ resourceID() string }](objs []O, res func(O) T) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		out = append(out, res(o))
	}
	return sortResources(out)
}

// goTime formats a timestamp the way Longhorn's API does: Go's
// time.Time.String() of the UTC time ("2026-12-01 18:49:00 +0000 UTC"),
// which Longhorn's UI parses and sorts by. A zero time gives Go's zero
// time string, as Longhorn sends for unset times.
func goTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.999999999 -0700 MST")
}

// conditionMap indexes conditions by type, as Longhorn's API shows them.
func conditionMap(cs []longhorn.Condition) map[string]longhorn.Condition {
	out := make(map[string]longhorn.Condition, len(cs))
	for _, c := range cs {
		out[c.Type] = c
	}
	return out
}

// nonNil returns s, or an empty slice for nil (JSON [] instead of null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// nonNilMap returns m, or an empty map for nil (JSON {} instead of null).
func nonNilMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}
