package iscsi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/longhorn-go/longhorn/internal/testutil"
)

// TestLibiscsiTools drives the target with libiscsi's command-line tools:
// discovery and LUN listing, standard INQUIRY, every VPD page we claim and
// READ CAPACITY (16).
func TestLibiscsiTools(t *testing.T) {
	for _, tool := range []string{"iscsi-ls", "iscsi-inq", "iscsi-readcapacity16"} {
		testutil.RequireTool(t, tool)
	}
	tt := startTarget(t, 1<<30, Config{}, nil)
	iqn := IQN(testVolume)
	checks := []struct {
		name string
		args []string
		want []string
	}{
		{"iscsi-ls", []string{"-s", "-i", "iqn.2024-01.io.test:ls", "iscsi://" + tt.addr},
			[]string{"Target:" + iqn + " Portal:" + tt.addr + ",1", "Lun:0    Type:STORAGE_ARRAY_CONTROLLER", "Lun:1    Type:DIRECT_ACCESS (Size:1023M)"}},
		{"iscsi-inq", []string{tt.url()},
			[]string{"Peripheral Device Type:DIRECT_ACCESS", "Removable:0", "HiSup:1", "CmdQue:1", "Vendor:LONGHORN", "Product:VIRTUAL-DISK", "Version Descriptor:0960 iSCSI"}},
		{"iscsi-inq", []string{"-e", "1", "-c", "0", tt.url()},
			[]string{"Page:0x00 SUPPORTED_VPD_PAGES", "Page:0x80 UNIT_SERIAL_NUMBER", "Page:0x83 DEVICE_IDENTIFICATION",
				"Page:0xb0 BLOCK_LIMITS", "Page:0xb1 BLOCK_DEVICE_CHARACTERISTICS", "Page:0xb2 LOGICAL_BLOCK_PROVISIONING"}},
		{"iscsi-inq", []string{"-e", "1", "-c", "128", tt.url()}, []string{"Unit Serial Number:["}},
		{"iscsi-inq", []string{"-e", "1", "-c", "131", tt.url()},
			[]string{"Designator:[" + iqn + "]", "Designator:[" + iqn + ",t,0x0001]", "Designator Type:(3) NAA",
				"Designator Type:(4) RELATIVE_TARGET_PORT", "Designator Type:(1) T10_VENDORT_ID"}},
		{"iscsi-inq", []string{"-e", "1", "-c", "176", tt.url()},
			[]string{"wsnz:1", "maximum compare and write length:255", "maximum transfer length:16384",
				"maximum unmap lba count:1048576", "optimal unmap granularity:8", "maximum write same length:65535"}},
		{"iscsi-inq", []string{"-e", "1", "-c", "177", tt.url()}, []string{"Medium Rotation Rate:1"}},
		{"iscsi-inq", []string{"-e", "1", "-c", "178", tt.url()},
			[]string{"lbpu:1", "lbpws:1", "lbpws10:1", "lbprz:0", "provisioning type:2"}},
		{"iscsi-readcapacity16", []string{tt.url()},
			[]string{"RETURNED LOGICAL BLOCK ADDRESS:2097151", "LOGICAL BLOCK LENGTH IN BYTES:512",
				"LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT:3", "LBPME:1 LBPRZ:0", "Total size:1073741824"}},
	}
	for _, c := range checks {
		t.Run(fmt.Sprintf("%s %s", c.name, strings.Join(c.args[:len(c.args)-1], " ")), func(t *testing.T) {
			out, err := runTool(t, 30*time.Second, c.name, c.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestLibiscsiCHAP: with CHAP configured, libiscsi logs in with the right
// secret only, for discovery and normal sessions.
func TestLibiscsiCHAP(t *testing.T) {
	testutil.RequireTool(t, "iscsi-inq")
	testutil.RequireTool(t, "iscsi-ls")
	tt := startTarget(t, 64<<20, Config{CHAPUser: "lhuser", CHAPSecret: "longhorn-secret-1"}, nil)
	iqn := IQN(testVolume)
	url := func(cred string) string { return fmt.Sprintf("iscsi://%s%s/%s/1", cred, tt.addr, iqn) }
	if out, err := runTool(t, 30*time.Second, "iscsi-inq", url("lhuser%longhorn-secret-1@")); err != nil || !strings.Contains(out, "Vendor:LONGHORN") {
		t.Fatalf("good secret: %v\n%s", err, out)
	}
	if out, err := runTool(t, 30*time.Second, "iscsi-ls", "-s", fmt.Sprintf("iscsi://lhuser%%longhorn-secret-1@%s", tt.addr)); err != nil || !strings.Contains(out, "Lun:1") {
		t.Fatalf("discovery with good secret: %v\n%s", err, out)
	}
	for _, cred := range []string{"lhuser%wrong-secret-123@", "other%longhorn-secret-1@", ""} {
		if out, err := runTool(t, 30*time.Second, "iscsi-inq", url(cred)); err == nil {
			t.Errorf("credentials %q: login succeeded:\n%s", cred, out)
		}
	}
}
