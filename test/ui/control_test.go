package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"time"

	"github.com/longhorn-go/longhorn/testbed/framework"
)

// control is the loopback server through which the browser suite asks for
// what a browser cannot do. Routes (POST, JSON body and answer):
//
//	/write        {volume, offset, size, seed} -> {sha256, frontend, node}: the data set through the volume's frontend (qemu-img)
//	/verify       {volume, offset, size, seed} -> {sha256}: read back and compare
//	/kill-replica {volume} -> {replica, node, pid}: kill -9 one running replica process
//
// Errors answer 500 with {"error": message}.
type control struct {
	f *framework.Cluster
}

type dataRequest struct {
	Volume string `json:"volume"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Seed   uint64 `json:"seed"`
}

func (c control) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /write", c.handle(c.write))
	mux.HandleFunc("POST /verify", c.handle(c.verify))
	mux.HandleFunc("POST /kill-replica", c.handle(c.killReplica))
	return mux
}

func (c control) handle(fn func(ctx context.Context, body []byte) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Minute)
		defer cancel()
		var body json.RawMessage
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body: " + err.Error()})
			return
		}
		out, err := fn(ctx, body)
		if err != nil {
			logf("control %s: %v", r.URL.Path, err)
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		logf("control %s: %s -> %v", r.URL.Path, body, out)
		writeJSON(w, http.StatusOK, out)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func parseData(body []byte) (dataRequest, framework.DataSet, error) {
	var in dataRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return in, framework.DataSet{}, err
	}
	if in.Volume == "" {
		return in, framework.DataSet{}, errors.New("volume: required")
	}
	d := framework.DataSet{Seed: in.Seed, Offset: in.Offset, Size: in.Size}
	return in, d, d.Validate()
}

func (c control) write(ctx context.Context, body []byte) (any, error) {
	in, d, err := parseData(body)
	if err != nil {
		return nil, err
	}
	ep, err := c.f.Endpoint(ctx, in.Volume)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := c.f.WriteData(ctx, ep, d); err != nil {
		return nil, err
	}
	return map[string]any{"sha256": d.SHA256(), "frontend": ep.Frontend, "node": ep.Node, "seconds": time.Since(t0).Seconds()}, nil
}

func (c control) verify(ctx context.Context, body []byte) (any, error) {
	in, d, err := parseData(body)
	if err != nil {
		return nil, err
	}
	ep, err := c.f.Endpoint(ctx, in.Volume)
	if err != nil {
		return nil, err
	}
	if err := c.f.VerifyData(ctx, ep, d); err != nil {
		return nil, err
	}
	return map[string]string{"sha256": d.SHA256()}, nil
}

// killReplica kills the replica process of the first running RW replica
// (by name) that is not on the engine's node, else the first one.
func (c control) killReplica(ctx context.Context, body []byte) (any, error) {
	var in struct {
		Volume string `json:"volume"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.Volume == "" {
		return nil, fmt.Errorf("volume: required (%v)", err)
	}
	ep, err := c.f.Endpoint(ctx, in.Volume)
	if err != nil {
		return nil, err
	}
	rs, err := c.f.Replicas(ctx, in.Volume)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Node != ep.Node && rs[j].Node == ep.Node })
	for _, r := range rs {
		if r.Mode != "RW" {
			continue
		}
		pid, err := c.f.KillReplica(ctx, r.Name)
		if err != nil {
			return nil, err
		}
		return map[string]any{"replica": r.Name, "node": r.Node, "pid": pid}, nil
	}
	return nil, fmt.Errorf("volume %s has no RW replica to kill (%d replicas)", in.Volume, len(rs))
}

// serve runs h on a free loopback port until ctx ends; it returns the URL.
func serve(ctx context.Context, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return "http://" + ln.Addr().String(), nil
}
