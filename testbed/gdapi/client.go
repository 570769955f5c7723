// Package gdapi is a schema-driven client of a gdapi ("Rancher API") REST
// server such as Longhorn's /v1, written the way Longhorn's Python test
// client (longhorn-tests manager/integration/tests/longhorn.py) works: it
// knows no paths. It bootstraps from one URL (following X-API-Schemas when
// the URL is not the schema collection), learns every type's collection URL
// and methods from the schemas, and then lists, reads by id, creates,
// updates, deletes and calls actions only through schema links, resource
// links.self and resource actions. A method the schema does not offer is
// refused before any request, as the Python client has no such method bound.
package gdapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Schema is what the client reads of a gdapi schema.
type Schema struct {
	ID                string                     `json:"id"`
	Type              string                     `json:"type"`
	Links             map[string]string          `json:"links"`
	PluralName        string                     `json:"pluralName"`
	ResourceMethods   []string                   `json:"resourceMethods"`
	CollectionMethods []string                   `json:"collectionMethods"`
	ResourceFields    map[string]json.RawMessage `json:"resourceFields"`
	ResourceActions   map[string]json.RawMessage `json:"resourceActions"`
}

// Object is a resource or collection as decoded JSON.
type Object map[string]any

// ID is the resource's id.
func (o Object) ID() string { return o.Str("id") }

// Type is the resource's type.
func (o Object) Type() string { return o.Str("type") }

// Str returns a string field ("" when missing or not a string).
func (o Object) Str(key string) string {
	s, _ := o[key].(string)
	return s
}

// Map returns a nested object field (nil when missing).
func (o Object) Map(key string) Object {
	m, _ := o[key].(map[string]any)
	return m
}

// Links is links (nil when missing).
func (o Object) Links() map[string]string { return stringMap(o["links"]) }

// Actions is actions: name -> URL.
func (o Object) Actions() map[string]string { return stringMap(o["actions"]) }

// Data returns the items of a collection.
func (o Object) Data() []Object {
	items, _ := o["data"].([]any)
	out := make([]Object, 0, len(items))
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			out[k] = s
		}
	}
	return out
}

// APIError is a non-2xx answer: the gdapi error object's fields.
type APIError struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Type    string `json:"type"`
}

func (e *APIError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// ErrNoMethod is returned when the schema does not offer the method.
var ErrNoMethod = errors.New("the schema does not offer this method")

// Client talks to one API through its schemas.
type Client struct {
	http  *http.Client
	Types map[string]Schema
}

// New bootstraps a client from url: GET it; when the answer's X-API-Schemas
// header names another URL, GET that; the answer must be a collection of
// schemas. Errors: HTTP failures, a non-gdapi answer, no schemas.
func New(url string) (*Client, error) {
	c := &Client{http: &http.Client{Timeout: 45 * time.Second}, Types: map[string]Schema{}}
	body, hdr, err := c.do("GET", url, nil)
	if err != nil {
		return nil, err
	}
	if s := hdr.Get("X-API-Schemas"); s != "" && s != url {
		if body, _, err = c.do("GET", s, nil); err != nil {
			return nil, err
		}
	}
	var coll struct {
		Data []Schema `json:"data"`
	}
	if err := json.Unmarshal(body, &coll); err != nil {
		return nil, fmt.Errorf("schemas from %s: %w", url, err)
	}
	for _, s := range coll.Data {
		if s.Type == "schema" {
			c.Types[s.ID] = s
		}
	}
	if len(c.Types) == 0 {
		return nil, fmt.Errorf("no schemas at %s", url)
	}
	return c, nil
}

// do sends one request and returns the body of a 2xx answer, or the
// answer's *APIError.
func (c *Client) do(method, url string, body any) ([]byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		apiErr := &APIError{Status: resp.StatusCode}
		if json.Unmarshal(data, apiErr) != nil || apiErr.Type != "error" {
			return nil, nil, fmt.Errorf("%s %s = %d with a body that is not a gdapi error: %.200s", method, url, resp.StatusCode, data)
		}
		return nil, nil, apiErr
	}
	return data, resp.Header, nil
}

func (c *Client) object(method, url string, body any) (Object, error) {
	data, _, err := c.do(method, url, body)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return nil, err
	}
	var o Object
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	return o, nil
}

// schema returns typ's schema when its collection or resource methods
// include method.
func (c *Client) schema(typ, method string, collection bool) (Schema, error) {
	s, ok := c.Types[typ]
	if !ok {
		return s, fmt.Errorf("%q is not a valid type", typ)
	}
	methods := s.ResourceMethods
	if collection {
		methods = s.CollectionMethods
	}
	if !slices.Contains(methods, method) {
		return s, fmt.Errorf("%s %s: %w", method, typ, ErrNoMethod)
	}
	if collection && s.Links["collection"] == "" {
		return s, fmt.Errorf("%s has no collection link", typ)
	}
	return s, nil
}

// List GETs typ's collection (query parameters may be nil).
func (c *Client) List(typ string, query url.Values) ([]Object, error) {
	s, err := c.schema(typ, "GET", true)
	if err != nil {
		return nil, err
	}
	u := s.Links["collection"]
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	o, err := c.object("GET", u, nil)
	if err != nil {
		return nil, err
	}
	if o.Type() != "collection" {
		return nil, fmt.Errorf("GET %s: type %q, not a collection", u, o.Type())
	}
	return o.Data(), nil
}

// ByID GETs <collection>/<id>; a 404 gives nil, nil (as the Python client).
func (c *Client) ByID(typ, id string) (Object, error) {
	s, err := c.schema(typ, "GET", true)
	if err != nil {
		return nil, err
	}
	o, err := c.object("GET", strings.TrimSuffix(s.Links["collection"], "/")+"/"+url.PathEscape(id), nil)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return nil, nil
	}
	return o, err
}

// Create POSTs body to typ's collection.
func (c *Client) Create(typ string, body any) (Object, error) {
	s, err := c.schema(typ, "POST", true)
	if err != nil {
		return nil, err
	}
	return c.object("POST", s.Links["collection"], body)
}

// Update PUTs body to the object's links.self.
func (c *Client) Update(o Object, body any) (Object, error) {
	if _, err := c.schema(o.Type(), "PUT", false); err != nil {
		return nil, err
	}
	return c.object("PUT", o.Links()["self"], body)
}

// Delete DELETEs the object's links.self.
func (c *Client) Delete(o Object) error {
	if _, err := c.schema(o.Type(), "DELETE", false); err != nil {
		return err
	}
	_, _, err := c.do("DELETE", o.Links()["self"], nil)
	return err
}

// Action POSTs body to the object's action URL; an action the object does
// not list (not valid in its state) is refused without a request.
func (c *Client) Action(o Object, name string, body any) (Object, error) {
	u, ok := o.Actions()[name]
	if !ok {
		return nil, fmt.Errorf("%s %s has no action %s (it has %v)", o.Type(), o.ID(), name, keys(o.Actions()))
	}
	if body == nil {
		body = map[string]any{}
	}
	return c.object("POST", u, body)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
