package csi

import (
	"context"
	"errors"
	"strings"
	"testing"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	mount "k8s.io/mount-utils"
)

func TestParseParameters(t *testing.T) {
	// Longhorn's examples/storageclass.yaml shape applies unchanged.
	o, err := parseParameters(map[string]string{"numberOfReplicas": "3", "staleReplicaTimeout": "2880", "fromBackup": "",
		"fsType": "ext4", "dataLocality": "best-effort", "diskSelector": "ssd, fast", "exclusive": "true",
		"csi.storage.k8s.io/pvc/name": "data"})
	if err != nil {
		t.Fatal(err)
	}
	c := o.create
	if c.NumberOfReplicas != 3 || c.StaleReplicaTimeout != 2880 || o.fsType != "ext4" || c.DataLocality != "best-effort" ||
		strings.Join(c.DiskSelector, "|") != "ssd|fast" || c.AccessMode != "rwop" || c.FromBackup != "" {
		t.Fatalf("options %+v", o)
	}
	// fromBackup goes to the manager, which restores the volume from it.
	if o, err := parseParameters(map[string]string{"fromBackup": "s3://b@us/?backup=x&volume=v"}); err != nil ||
		o.create.FromBackup != "s3://b@us/?backup=x&volume=v" {
		t.Fatalf("fromBackup: %+v %v", o, err)
	}
	refused := map[string]string{
		"numberOfReplicas":        "0",
		"encrypted":               "true",
		"share":                   "true",
		"replicaSoftAntiAffinity": "enabled",
		"dataEngine":              "v2",
		"fsType":                  "btrfs",
		"recurringJobSelector":    `[{"name":"snap","isGroup":false}]`,
		"cloneMode":               "linked-clone",
		"noSuchParameter":         "1",
	}
	for k, v := range refused {
		_, err := parseParameters(map[string]string{k: v})
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%q: error %v, want a refusal naming the parameter", k, v, err)
		}
	}
	if o, err := parseParameters(map[string]string{"dataSource": "vol://src", "cloneMode": "full-copy"}); err != nil || o.create.DataSource != "vol://src" {
		t.Errorf("dataSource: %+v %v", o, err)
	}
	if _, err := parseParameters(map[string]string{"replicaSoftAntiAffinity": "ignored", "migratable": "false"}); err != nil {
		t.Errorf("no-op values refused: %v", err)
	}
}

func TestRoundSize(t *testing.T) {
	cases := []struct {
		req, lim int64
		fs       string
		want     int64
		code     codes.Code
	}{
		{0, 0, "", defaultSize, codes.OK},
		{1, 0, "", minSize, codes.OK},
		{11 << 20, 0, "", 12 << 20, codes.OK},
		{100 << 20, 0, "xfs", minSizeXFS, codes.OK},
		{(1 << 30) + 1, 0, "", (1 << 30) + sizeAlign, codes.OK},
		{3 << 20, 3 << 20, "", 0, codes.OutOfRange},
		{0, 64 << 20, "", 64 << 20, codes.OK},
	}
	for _, c := range cases {
		got, err := roundSize(&csi.CapacityRange{RequiredBytes: c.req, LimitBytes: c.lim}, c.fs)
		if status.Code(err) != c.code || (c.code == codes.OK && got != c.want) {
			t.Errorf("roundSize(%d, %d, %q) = %d, %v; want %d, %v", c.req, c.lim, c.fs, got, err, c.want, c.code)
		}
	}
}

func TestVolumeName(t *testing.T) {
	if got := volumeName("pvc-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"); got != "pvc-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0" {
		t.Errorf("PV name changed to %q", got)
	}
	a := volumeName("sanity-controller-create-single-volume-6D3E0AF7-6C3FA3F5")
	b := volumeName("sanity-controller-create-single-volume-6D3E0AF7-6C3FA3F6")
	if a == b || len(a) > maxVolumeName || strings.ToLower(a) != a {
		t.Errorf("long names %q %q: want distinct, lower case, at most %d", a, b, maxVolumeName)
	}
	if got := volumeName("My_Vol"); got != "my-vol" {
		t.Errorf("My_Vol -> %q", got)
	}
	if got := volumeName("___"); got == "" || len(got) > maxVolumeName {
		t.Errorf("___ -> %q", got)
	}
}

func TestAttachmentIDAndEndpoint(t *testing.T) {
	id := attachmentID("v", DefaultDriverName, "n1")
	if !strings.HasPrefix(id, "csi-") || len(id) != 4+64 || id == attachmentID("v", DefaultDriverName, "n2") {
		t.Errorf("attachment id %q", id)
	}
	for _, c := range []struct{ in, want string }{
		{"unix:///csi/csi.sock", "/csi/csi.sock"}, {"unix:/csi/csi.sock", "/csi/csi.sock"}, {"/csi/csi.sock", "/csi/csi.sock"},
	} {
		if got, err := ParseEndpoint(c.in); err != nil || got != c.want {
			t.Errorf("ParseEndpoint(%q) = %q, %v", c.in, got, err)
		}
	}
	if _, err := ParseEndpoint("tcp://1.2.3.4:5"); err == nil {
		t.Error("tcp endpoint accepted")
	}
}

func TestCheckCapabilities(t *testing.T) {
	mnt := func(fs string, m csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
		return &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fs}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: m}}
	}
	if a, fs, err := checkCapabilities([]*csi.VolumeCapability{mnt("", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)}, ""); err != nil || a != "rwo" || fs != "ext4" {
		t.Errorf("RWO: %s %s %v", a, fs, err)
	}
	if a, _, err := checkCapabilities([]*csi.VolumeCapability{mnt("xfs", csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER)}, ""); err != nil || a != "rwop" {
		t.Errorf("RWOP: %s %v", a, err)
	}
	_, _, err := checkCapabilities([]*csi.VolumeCapability{mnt("", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)}, "")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "share manager") {
		t.Errorf("RWX: %v", err)
	}
	if _, _, err := checkCapabilities([]*csi.VolumeCapability{mnt("xfs", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)}, "ext4"); err == nil {
		t.Error("fsType conflict accepted")
	}
}

func TestParseBlkid(t *testing.T) {
	if fs, err := parseBlkid("DEVNAME=/dev/loop0\nTYPE=xfs\n"); err != nil || fs != "xfs" {
		t.Errorf("xfs: %q %v", fs, err)
	}
	if fs, err := parseBlkid("PTTYPE=gpt\n"); err != nil || !strings.HasPrefix(fs, "partitions") {
		t.Errorf("gpt: %q %v", fs, err)
	}
	if _, err := parseBlkid(""); err == nil {
		t.Error("blkid success without TYPE taken as a format")
	}
}

// fakeMounter records what the node service asked for.
type fakeMounter struct {
	mount.Interface
	format    string
	formatErr error
	formatted []string
	checked   []string
}

func (f *fakeMounter) DiskFormat(context.Context, string) (string, error) {
	return f.format, f.formatErr
}
func (f *fakeMounter) Format(_ context.Context, fs, dev string, _ []string) error {
	f.formatted = append(f.formatted, fs+":"+dev)
	return nil
}
func (f *fakeMounter) Check(_ context.Context, fs, dev string) error {
	f.checked = append(f.checked, fs+":"+dev)
	return nil
}
func (f *fakeMounter) NeedResize(string, string) (bool, error)           { return false, nil }
func (f *fakeMounter) Resize(string, string) error                       { return nil }
func (f *fakeMounter) GrowOffline(context.Context, string, string) error { return nil }

// TestNeverFormatAfterAProbeError is Longhorn bug #14042: an I/O error or a
// timeout while probing must never lead to mkfs over existing data.
func TestNeverFormatAfterAProbeError(t *testing.T) {
	d, err := New(Config{NodeID: "n1", ManagerURL: "http://127.0.0.1:1/v1", Mounter: &fakeMounter{}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		m         *fakeMounter
		code      codes.Code
		formatted int
		checked   int
	}{
		{"probe error", &fakeMounter{formatErr: errors.New("read /dev/longhorn/v at 0: input/output error")}, codes.Unavailable, 0, 0},
		{"empty", &fakeMounter{}, codes.OK, 1, 0},
		{"ext4", &fakeMounter{format: "ext4"}, codes.OK, 0, 1},
		{"other fs", &fakeMounter{format: "xfs"}, codes.FailedPrecondition, 0, 0},
		{"partitions", &fakeMounter{format: "partitions (gpt)"}, codes.FailedPrecondition, 0, 0},
	}
	for _, c := range cases {
		s := &nodeServer{d: d, m: c.m}
		err := s.formatOrCheck(context.Background(), "/dev/longhorn/v", "ext4", "")
		if status.Code(err) != c.code || len(c.m.formatted) != c.formatted || len(c.m.checked) != c.checked {
			t.Errorf("%s: %v, formatted %v, checked %v", c.name, err, c.m.formatted, c.m.checked)
		}
	}
}

func TestDiskFormatOfAMissingDeviceIsAnError(t *testing.T) {
	if _, err := NewHostMounter().DiskFormat(context.Background(), "/nonexistent/device"); err == nil {
		t.Fatal("a device that cannot be read was reported empty")
	}
}

func TestParseDumpe2fs(t *testing.T) {
	b, s, err := parseDumpe2fs("Filesystem volume name:   <none>\nBlock count:              131072\nBlock size:               1024\n")
	if err != nil || b != 131072 || s != 1024 {
		t.Fatalf("%d %d %v", b, s, err)
	}
	if _, _, err := parseDumpe2fs("nothing"); err == nil {
		t.Fatal("no error without a block count")
	}
}
