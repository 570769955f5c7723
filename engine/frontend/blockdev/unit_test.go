package blockdev

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/netlink"

	"github.com/longhorn-go/longhorn/engine/frontend/nbd"
)

func TestChooseMode(t *testing.T) {
	all := Probe{NBD: true, ISCSI: true, FUSE: true}
	cases := []struct {
		want    Mode
		probe   Probe
		mode    Mode
		reason  string
		errPart string
	}{
		{ModeAuto, all, ModeNBD, "first choice", ""},
		{ModeAuto, Probe{ISCSI: true, FUSE: true}, ModeISCSI, "no nbd: node lacks /dev/nbd0 (the nbd kernel module)", ""},
		{ModeAuto, Probe{FUSE: true}, ModeFUSE, "no nbd: node lacks /dev/nbd0 (the nbd kernel module); no iscsi: node lacks iscsiadm and the iscsi_tcp kernel module", ""},
		{ModeAuto, Probe{}, "", "", "can make no block device"},
		{ModeFUSE, all, ModeFUSE, "asked for", ""},
		{ModeISCSI, Probe{FUSE: true}, "", "", "mode iscsi was asked for but the node lacks iscsiadm"},
	}
	for _, c := range cases {
		m, r, err := ChooseMode(c.want, c.probe)
		if c.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), c.errPart) {
				t.Errorf("ChooseMode(%q, %+v) error %v, want %q", c.want, c.probe, err, c.errPart)
			}
			continue
		}
		if err != nil || m != c.mode || r != c.reason {
			t.Errorf("ChooseMode(%q, %+v) = %q, %q, %v; want %q, %q", c.want, c.probe, m, r, err, c.mode, c.reason)
		}
	}
}

func TestLoopTag(t *testing.T) {
	for _, v := range []string{"v", strings.Repeat("a", 253)} {
		a, b := loopTag(v), loopTag(v)
		if a == b || len(a) > 63 || !strings.HasPrefix(a, loopPrefix(v)) || !strings.HasPrefix(b, loopPrefix(v)) {
			t.Errorf("tags %q %q: want distinct, at most 63 bytes, prefix %q", a, b, loopPrefix(v))
		}
	}
	if loopPrefix("a") == loopPrefix("b") {
		t.Error("two volumes share a prefix")
	}
}

func TestMountsAt(t *testing.T) {
	got := mountsAt("/proc")
	if len(got) == 0 || got[len(got)-1].FSType != "proc" {
		t.Fatalf("mountsAt(/proc) = %+v, want the proc mount", got)
	}
	if got := mountsAt(t.TempDir()); len(got) != 0 {
		t.Fatalf("mountsAt(a fresh directory) = %+v, want none", got)
	}
}

// TestNBDClientHandshake runs the kernel mode's handshake against the
// engine's NBD server and checks the size and flags it would hand the kernel.
func TestNBDClientHandshake(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "v.sock")
	srv, err := nbd.New(nbd.Config{Listen: "unix:" + sock})
	if err != nil {
		t.Fatal(err)
	}
	be := newFileBackend(t, 8<<20)
	if err := srv.Startup(context.Background(), "vol", be.Size(), be); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	size, flags, err := nbdClientHandshake(c, "vol")
	if err != nil {
		t.Fatal(err)
	}
	if size != 8<<20 || flags&1 == 0 || flags&(1<<2) == 0 {
		t.Fatalf("size %d flags %#x: want 8 MiB with HAS_FLAGS and SEND_FLUSH", size, flags)
	}
	c2, _ := net.Dial("unix", sock)
	defer c2.Close()
	_ = c2.SetDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := nbdClientHandshake(c2, "other"); err == nil {
		t.Fatal("handshake for an unknown export succeeded")
	}
}

func TestNBDConnectAttrs(t *testing.T) {
	b, err := nbdConnectAttrs(1<<30, 0x2d, []uint32{7, 9})
	if err != nil {
		t.Fatal(err)
	}
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatal(err)
	}
	var size, flags uint64
	var fds []uint32
	for ad.Next() {
		switch ad.Type() {
		case nbdAttrSizeBytes:
			size = ad.Uint64()
		case nbdAttrServerFlag:
			flags = ad.Uint64()
		case nbdAttrSockets:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					nad.Nested(func(iad *netlink.AttributeDecoder) error {
						for iad.Next() {
							fds = append(fds, iad.Uint32())
						}
						return nil
					})
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil || size != 1<<30 || flags != 0x2d || len(fds) != 2 || fds[0] != 7 || fds[1] != 9 {
		t.Fatalf("decoded size %d flags %#x fds %v err %v", size, flags, fds, err)
	}
}

func TestISCSIAdmCommand(t *testing.T) {
	if got := iscsiAdmCommand(Config{}, false); strings.Join(got, " ") != "iscsiadm" {
		t.Errorf("plain: %v", got)
	}
	if got := iscsiAdmCommand(Config{}, true); got[0] != "nsenter" || got[len(got)-1] != "iscsiadm" {
		t.Errorf("host namespaces: %v", got)
	}
	if got := iscsiByPath("10.0.0.1:3260", "iqn.2019-10.io.longhorn:vol"); got != "/dev/disk/by-path/ip-10.0.0.1:3260-iscsi-iqn.2019-10.io.longhorn:vol-lun-1" {
		t.Errorf("by-path %s", got)
	}
	if _, err := attachISCSI(context.Background(), Config{ISCSIListen: ":3260"}, "v", 1<<20, nil); err == nil {
		t.Error("iscsi mode with an unspecified portal host accepted")
	}
}

// FuzzNBDGoReplies: the option replies come from a local server, but the
// parser must never panic or allocate beyond its bound on any input.
func FuzzNBDGoReplies(f *testing.F) {
	rep := func(typ uint32, data []byte) []byte {
		b := binary.BigEndian.AppendUint64(nil, nbdRepMagic)
		b = binary.BigEndian.AppendUint32(b, nbdOptGo)
		b = binary.BigEndian.AppendUint32(b, typ)
		b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
		return append(b, data...)
	}
	info := binary.BigEndian.AppendUint16(nil, nbdInfoExport)
	info = binary.BigEndian.AppendUint64(info, 1<<20)
	info = binary.BigEndian.AppendUint16(info, 0x2d)
	f.Add(append(rep(nbdRepInfo, info), rep(nbdRepAck, nil)...))
	f.Add(rep(nbdRepErrBit|1, []byte("no such export")))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = nbdReadGoReplies(bytes.NewReader(b))
	})
}

// TestOwnedLoop: a readable tag decides alone; an unreadable one (dead FUSE
// daemon) falls back to the backing file, kept or deleted.
func TestOwnedLoop(t *testing.T) {
	const file = "/var/lib/longhorn/fuse/v/v"
	cases := []struct {
		l    attachedLoop
		tag  string
		want bool
	}{
		{attachedLoop{tag: "lhbd:1:a", tagKnown: true, backing: "/x"}, "lhbd:1:a", true},
		{attachedLoop{tag: "lhbd:1:b", tagKnown: true, backing: file}, "lhbd:1:a", false},
		{attachedLoop{tag: "", tagKnown: true, backing: file}, "", false},
		{attachedLoop{backing: file}, "lhbd:1:a", true},
		{attachedLoop{backing: file + " (deleted)"}, "lhbd:1:a", true},
		{attachedLoop{backing: "/other/v/v"}, "lhbd:1:a", false},
	}
	for i, c := range cases {
		if got := ownedLoop(c.l, c.tag, file); got != c.want {
			t.Errorf("case %d: ownedLoop(%+v) = %v, want %v", i, c.l, got, c.want)
		}
	}
	if ownedLoop(attachedLoop{backing: file}, "t", "") {
		t.Error("an empty backing file matched an unreadable loop")
	}
}
