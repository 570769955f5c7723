package csi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/longhorn-go/longhorn/internal/svcenv"
)

// Client is the CSI plugin's client of the manager's REST API
// (http://longhorn-backend:9500/v1, Longhorn's resource and action shapes):
// the only way the plugin reads or changes Longhorn objects, as Longhorn's
// CSI driver does.
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a client of the API at baseURL (".../v1").
func NewClient(baseURL string) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--manager-url %q: want http://HOST:PORT/v1", baseURL)
	}
	// The cluster may have no DNS (the local test bed): a Service name
	// such as longhorn-backend that does not resolve is reached at its
	// LONGHORN_BACKEND_SERVICE_HOST address.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = svcenv.Dialer((&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: &http.Client{Timeout: 30 * time.Second, Transport: tr}}, nil
}

// APIError is an error object of the API ({type: "error", status, code, message}).
type APIError struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("manager API: %d %s: %s", e.Status, e.Code, e.Message)
}

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// IsInvalid reports whether err is a 4xx other than 404: the request was
// refused for what it asked, not for a failure.
func IsInvalid(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusNotFound
}

// Volume is the part of the API's volume resource the plugin reads.
type Volume struct {
	Name                    string            `json:"name"`
	Size                    string            `json:"size"`
	Frontend                string            `json:"frontend"`
	State                   string            `json:"state"`
	Robustness              string            `json:"robustness"`
	NumberOfReplicas        int               `json:"numberOfReplicas"`
	AccessMode              string            `json:"accessMode"`
	Migratable              bool              `json:"migratable"`
	Encrypted               bool              `json:"encrypted"`
	DataSource              string            `json:"dataSource"`
	FromBackup              string            `json:"fromBackup"`
	DataEngine              string            `json:"dataEngine"`
	DiskSelector            []string          `json:"diskSelector"`
	NodeSelector            []string          `json:"nodeSelector"`
	CurrentNodeID           string            `json:"currentNodeID"`
	Ready                   bool              `json:"ready"`
	ExpansionRequired       bool              `json:"expansionRequired"`
	Controllers             []Controller      `json:"controllers"`
	Replicas                []Replica         `json:"replicas"`
	Conditions              map[string]Cond   `json:"conditions"`
	KubernetesStatus        map[string]any    `json:"kubernetesStatus"`
	RevisionCounterDisabled bool              `json:"revisionCounterDisabled"`
	CloneStatus             CloneStatus       `json:"cloneStatus"`
	Actions                 map[string]string `json:"actions"`
}

// CloneStatus is a volume's clone from its data source.
type CloneStatus struct {
	SourceVolume string `json:"sourceVolume"`
	Snapshot     string `json:"snapshot"`
	State        string `json:"state"`
	AttemptCount int    `json:"attemptCount"`
}

// Controller is an engine of a volume ("controllers" in the API).
type Controller struct {
	Name        string `json:"name"`
	HostID      string `json:"hostId"`
	Endpoint    string `json:"endpoint"`
	Size        string `json:"size"`
	IsExpanding bool   `json:"isExpanding"`
	Running     bool   `json:"running"`
}

// Replica is a replica of a volume.
type Replica struct {
	Name     string `json:"name"`
	HostID   string `json:"hostId"`
	DataPath string `json:"dataPath"`
	Running  bool   `json:"running"`
}

// Cond is a condition of a volume.
type Cond struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// VolumeCreate is the body of POST /v1/volumes the plugin sends: only
// fields the API applies.
type VolumeCreate struct {
	Name                      string   `json:"name"`
	Size                      string   `json:"size"`
	NumberOfReplicas          int      `json:"numberOfReplicas,omitempty"`
	Frontend                  string   `json:"frontend,omitempty"`
	FromBackup                string   `json:"fromBackup,omitempty"`
	DataSource                string   `json:"dataSource,omitempty"`
	DataLocality              string   `json:"dataLocality,omitempty"`
	AccessMode                string   `json:"accessMode,omitempty"`
	Migratable                bool     `json:"migratable,omitempty"`
	Encrypted                 bool     `json:"encrypted,omitempty"`
	StaleReplicaTimeout       int      `json:"staleReplicaTimeout,omitempty"`
	DiskSelector              []string `json:"diskSelector,omitempty"`
	NodeSelector              []string `json:"nodeSelector,omitempty"`
	BackingImage              string   `json:"backingImage,omitempty"`
	DataEngine                string   `json:"dataEngine,omitempty"`
	RevisionCounterDisabled   bool     `json:"revisionCounterDisabled,omitempty"`
	ReplicaAutoBalance        string   `json:"replicaAutoBalance,omitempty"`
	UnmapMarkSnapChainRemoved string   `json:"unmapMarkSnapChainRemoved,omitempty"`
	BackupTargetName          string   `json:"backupTargetName,omitempty"`
	// ResourceLimits are the StorageClass's resource-limit parameters (not
	// in Longhorn; types.ResourceLimitParameters).
	ResourceLimits map[string]string `json:"resourceLimits,omitempty"`
}

// Node is the part of the API's node resource the plugin reads.
type Node struct {
	Name            string          `json:"name"`
	AllowScheduling bool            `json:"allowScheduling"`
	Disks           map[string]Disk `json:"disks"`
	Zone            string          `json:"zone"`
	Region          string          `json:"region"`
}

// Disk is a disk of a node.
type Disk struct {
	AllowScheduling  bool  `json:"allowScheduling"`
	StorageAvailable int64 `json:"storageAvailable"`
	StorageReserved  int64 `json:"storageReserved"`
	StorageMaximum   int64 `json:"storageMaximum"`
	StorageScheduled int64 `json:"storageScheduled"`
}

// Snapshot is a snapshot of a volume (snapshotCreate/snapshotGet answers).
type Snapshot struct {
	Name     string `json:"name"`
	Created  string `json:"created"`
	Size     string `json:"size"`
	Removed  bool   `json:"removed"`
	UserMade bool   `json:"usercreated"`
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("manager API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("manager API %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		ae := &APIError{Status: resp.StatusCode}
		if json.Unmarshal(data, ae) != nil || ae.Message == "" {
			ae.Message = strings.TrimSpace(string(data))
		}
		ae.Status = resp.StatusCode
		return ae
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("manager API %s %s: answer is not the expected JSON: %w", method, path, err)
	}
	return nil
}

// GetVolume returns the volume; IsNotFound(err) when there is none.
func (c *Client) GetVolume(ctx context.Context, name string) (*Volume, error) {
	var v Volume
	if err := c.do(ctx, http.MethodGet, "/volumes/"+url.PathEscape(name), nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// CreateVolume creates a volume.
func (c *Client) CreateVolume(ctx context.Context, in VolumeCreate) (*Volume, error) {
	var v Volume
	if err := c.do(ctx, http.MethodPost, "/volumes", in, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// DeleteVolume deletes a volume; a missing one is success.
func (c *Client) DeleteVolume(ctx context.Context, name string) error {
	err := c.do(ctx, http.MethodDelete, "/volumes/"+url.PathEscape(name), nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// VolumeAction runs POST /v1/volumes/NAME?action=ACTION with body in and
// decodes the answer into out (nil to ignore it).
func (c *Client) VolumeAction(ctx context.Context, name, action string, in, out any) error {
	if in == nil {
		in = struct{}{}
	}
	return c.do(ctx, http.MethodPost, "/volumes/"+url.PathEscape(name)+"?action="+url.QueryEscape(action), in, out)
}

// ListNodes returns every Longhorn node.
func (c *Client) ListNodes(ctx context.Context) ([]Node, error) {
	var coll struct {
		Data []Node `json:"data"`
	}
	if err := c.do(ctx, http.MethodGet, "/nodes", nil, &coll); err != nil {
		return nil, err
	}
	return coll.Data, nil
}

// GetNode returns one Longhorn node.
func (c *Client) GetNode(ctx context.Context, name string) (*Node, error) {
	var n Node
	if err := c.do(ctx, http.MethodGet, "/nodes/"+url.PathEscape(name), nil, &n); err != nil {
		return nil, err
	}
	return &n, nil
}

// Ping checks that the API answers (GET /v1).
func (c *Client) Ping(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "", nil, nil)
}
