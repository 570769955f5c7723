package blockdev

import (
	"fmt"
	"os"
	"os/exec"
)

// Probe is what the node offers for making a block device.
type Probe struct {
	// NBD: /dev/nbd0 exists (the nbd module is loaded).
	NBD bool
	// ISCSI: iscsiadm is found and the iscsi_tcp transport is loaded.
	ISCSI bool
	// FUSE: /dev/fuse and /dev/loop-control exist.
	FUSE bool
}

// ProbeHost looks at this node.
func ProbeHost() Probe {
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	_, err := exec.LookPath("iscsiadm")
	hostISCSI := exists("/host/proc/1/ns/mnt") // iscsiadm run in the host through nsenter
	return Probe{
		NBD:   exists("/dev/nbd0"),
		ISCSI: (err == nil || hostISCSI) && (exists("/sys/module/iscsi_tcp") || exists("/sys/class/iscsi_transport/tcp")),
		FUSE:  exists("/dev/fuse") && exists("/dev/loop-control"),
	}
}

// ChooseMode returns the mode to use and why: the forced mode if the node
// offers it, else the first of nbd, iscsi, fuse that it offers. The error
// names what is missing.
func ChooseMode(want Mode, p Probe) (Mode, string, error) {
	have := map[Mode]bool{ModeNBD: p.NBD, ModeISCSI: p.ISCSI, ModeFUSE: p.FUSE}
	need := map[Mode]string{
		ModeNBD:   "/dev/nbd0 (the nbd kernel module)",
		ModeISCSI: "iscsiadm and the iscsi_tcp kernel module",
		ModeFUSE:  "/dev/fuse and /dev/loop-control",
	}
	if want != ModeAuto {
		if !have[want] {
			return "", "", fmt.Errorf("blockdev: mode %s was asked for but the node lacks %s", want, need[want])
		}
		return want, "asked for", nil
	}
	reason := ""
	for _, m := range []Mode{ModeNBD, ModeISCSI, ModeFUSE} {
		if have[m] {
			if reason == "" {
				return m, "first choice", nil
			}
			return m, reason, nil
		}
		if reason != "" {
			reason += "; "
		}
		reason += fmt.Sprintf("no %s: node lacks %s", m, need[m])
	}
	return "", "", fmt.Errorf("blockdev: the node can make no block device: %s", reason)
}
