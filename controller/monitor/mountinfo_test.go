package monitor

import (
	"strings"
	"testing"
)

const sampleMountInfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:26 / /proc rw,nosuid - proc proc rw
40 22 8:2 / /var/lib rw,relatime master:3 - ext4 /dev/sda2 rw
41 40 8:3 / /var/lib/longhorn rw,relatime shared:7 master:3 - xfs /dev/sdb rw
42 22 8:4 / /mnt/with\040space rw - ext4 /dev/sdc rw
`

func TestMountOf(t *testing.T) {
	mounts, err := ParseMountInfo(strings.NewReader(sampleMountInfo))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path, mountPoint string
		shared           bool
	}{
		{"/var/lib/longhorn", "/var/lib/longhorn", true},
		{"/var/lib/longhorn/replicas/x", "/var/lib/longhorn", true},
		{"/var/lib/longhorn-other", "/var/lib", false}, // a prefix of the name is not a parent
		{"/var/lib", "/var/lib", false},
		{"/mnt/with space/d", "/mnt/with space", false},
		{"/home", "/", true},
	}
	for _, tc := range cases {
		m, ok := MountOf(mounts, tc.path)
		if !ok || m.MountPoint != tc.mountPoint || m.Shared != tc.shared {
			t.Errorf("MountOf(%s) = %+v %v, want %s shared=%v", tc.path, m, ok, tc.mountPoint, tc.shared)
		}
	}
	if _, ok := MountOf(nil, "/x"); ok {
		t.Error("MountOf with no mounts found one")
	}
}

func TestParseMountInfoErrors(t *testing.T) {
	for _, bad := range []string{"22 1 8:1 / /\n", "22 1 8:1 / / rw shared:1 ext4 /dev/sda1 rw\n"} {
		if _, err := ParseMountInfo(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "22 1 8:1") {
			t.Errorf("ParseMountInfo(%q) error %v, want one quoting the line", bad, err)
		}
	}
}

func TestMountPropagationOfThisProcess(t *testing.T) {
	// Whatever this machine does, the answer comes from a real mount and
	// a missing path is an error.
	if _, err := MountPropagation(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := MountPropagation("/no/such/dir/here"); err == nil {
		t.Fatal("no error for a missing path")
	}
}

func FuzzParseMountInfo(f *testing.F) {
	f.Add(sampleMountInfo)
	f.Add(`42 22 8:4 / /a\04 rw - x y z`)
	f.Fuzz(func(t *testing.T, s string) {
		mounts, err := ParseMountInfo(strings.NewReader(s))
		if err == nil {
			_, _ = MountOf(mounts, "/var/lib/longhorn")
		}
	})
}
