package replicasrv

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// rawCodec sends and receives message bytes as they are, so a test can
// speak the wire format without our generated types.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// wireFields decodes one level of a protobuf message: number -> values
// (bytes of length-delimited fields, varints as decimal strings).
func wireFields(t *testing.T, b []byte) map[protowire.Number][]string {
	t.Helper()
	out := map[protowire.Number][]string{}
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			t.Fatalf("bad tag in %x", b)
		}
		b = b[l:]
		switch typ {
		case protowire.VarintType:
			v, l := protowire.ConsumeVarint(b)
			out[n] = append(out[n], strconv.FormatUint(v, 10))
			b = b[l:]
		case protowire.BytesType:
			v, l := protowire.ConsumeBytes(b)
			out[n] = append(out[n], string(v))
			b = b[l:]
		default:
			t.Fatalf("unexpected wire type %v", typ)
		}
	}
	return out
}

func appendString(b []byte, n protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), s)
}

func appendVarint(b []byte, n protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), v)
}

// TestLonghornControllerWire drives our replica with the bytes Longhorn's
// controller sends (longhorn-engine-wire.md §2.4, §4), built field by field,
// and reads the answers the same way: a fresh replica is closed, opens,
// reports size as a decimal string and sector size 512, takes a snapshot,
// refuses the same name with Longhorn's text, marks rebuilding, and fails
// an expansion with the JSON body.
func TestLonghornControllerWire(t *testing.T) {
	_, port := startClosed(t, filepath.Join(t.TempDir(), "r"), 1<<20)
	conn := grpcConn(t, port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(method string, req []byte) ([]byte, error) {
		var resp []byte
		err := conn.Invoke(ctx, "/ptypes.ReplicaService/"+method, &req, &resp, grpc.ForceCodec(rawCodec{}))
		return resp, err
	}
	replicaOf := func(method string, req []byte) map[protowire.Number][]string {
		t.Helper()
		resp, err := call(method, req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		outer := wireFields(t, resp)
		if len(outer[1]) != 1 {
			t.Fatalf("%s: answer %x has no replica (field 1)", method, resp)
		}
		return wireFields(t, []byte(outer[1][0]))
	}
	r := replicaOf("ReplicaGet", nil)
	if r[8][0] != "closed" || r[5][0] != "1048576" || r[6][0] != "512" {
		t.Fatalf("fresh replica: state %v size %v sector %v", r[8], r[5], r[6])
	}
	r = replicaOf("ReplicaOpen", appendVarint(nil, 2, 1<<20)) // expected_backend_size
	if s := r[8][0]; s != "dirty" && s != "open" {
		t.Fatalf("open: state %q", s)
	}
	if len(r[9]) != 1 || !strings.HasPrefix(r[9][0], "volume-head-") || len(r[10]) != 1 {
		t.Fatalf("open: chain %v, %d disks", r[9], len(r[10]))
	}
	snap := appendString(appendString(nil, 1, "s1"), 3, "2026-12-01T10:00:00Z")
	r = replicaOf("ReplicaSnapshot", snap)
	if r[4][0] != "volume-snap-s1.img" || r[17][0] != "1" || r[19][0] != "2" {
		t.Fatalf("snapshot: parent %v usage %v total %v", r[4], r[17], r[19])
	}
	if _, err := call("ReplicaSnapshot", snap); !strings.Contains(err.Error(), "snapshot volume-snap-s1.img is already existing") {
		t.Fatalf("duplicate snapshot: %v", err)
	}
	if r = replicaOf("RebuildingSet", appendVarint(nil, 1, 1)); r[8][0] != "rebuilding" || r[2][0] != "1" {
		t.Fatalf("rebuilding set: %v %v", r[8], r[2])
	}
	_, err := call("ReplicaExpand", appendVarint(nil, 1, 4096))
	if status.Code(err) != codes.Internal || !strings.HasPrefix(status.Convert(err).Message(), `{"code":"FunctionFailedWithoutRollback"`) {
		t.Fatalf("shrink: %v", err)
	}
	if r = replicaOf("ReplicaClose", nil); r[8][0] != "closed" {
		t.Fatalf("close: %v", r[8])
	}
}

// startClosed starts a replica process and leaves its replica closed.
func startClosed(t *testing.T, dir string, size int64) (*Process, int) {
	t.Helper()
	pr, port := startProcess(t, dir, size)
	if _, err := pr.Server.ReplicaClose(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return pr, port
}
