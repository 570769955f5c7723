package v1beta2

import (
	"encoding/json"
	"strings"
	"testing"
)

// A Volume manifest as Longhorn users write it decodes into the same fields
// and encodes back with Longhorn's JSON keys.
func TestVolumeJSONMatchesLonghorn(t *testing.T) {
	in := `{"apiVersion":"longhorn.io/v1beta2","kind":"Volume",
	 "metadata":{"name":"vol1","namespace":"longhorn-system"},
	 "spec":{"size":"1073741824","numberOfReplicas":3,"Standby":true,"frontend":"blockdev",
	  "dataEngine":"v1","snapshotMaxSize":"0","backupBlockSize":"2097152",
	  "staleReplicaTimeout":2880,"accessMode":"rwo"}}`
	var v Volume
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if v.Spec.Size != 1<<30 || !v.Spec.Standby || v.Spec.NumberOfReplicas != 3 ||
		v.Spec.BackupBlockSize != BackupBlockSize2Mi || v.Spec.Frontend != VolumeFrontendBlockDev {
		t.Fatalf("decoded spec = %+v", v.Spec)
	}
	out, err := json.Marshal(&v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	for _, want := range []string{`"Standby":true`, `"size":"1073741824"`, `"backupBlockSize":"2097152"`, `"snapshotMaxSize":"0"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("encoded volume lacks %s: %s", want, out)
		}
	}
}

// Engine and Replica specs inline InstanceSpec: its keys sit directly under spec.
func TestInstanceSpecInline(t *testing.T) {
	e := Engine{Spec: EngineSpec{InstanceSpec: InstanceSpec{VolumeName: "v", VolumeSize: 5, NodeID: "n1"}}}
	out, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"spec":{"volumeName":"v","volumeSize":"5","nodeID":"n1"`) {
		t.Fatalf("InstanceSpec not inlined: %s", out)
	}
}

func TestSetCondition(t *testing.T) {
	conds := SetCondition(nil, VolumeConditionTypeScheduled, ConditionStatusTrue, "", "", "t1")
	if len(conds) != 1 || conds[0].LastTransitionTime != "t1" {
		t.Fatalf("new condition = %+v", conds)
	}
	conds = SetCondition(conds, VolumeConditionTypeScheduled, ConditionStatusTrue, "", "again", "t2")
	if conds[0].LastTransitionTime != "t1" || conds[0].LastProbeTime != "t2" || conds[0].Message != "again" {
		t.Fatalf("same status must keep the transition time: %+v", conds[0])
	}
	conds = SetCondition(conds, VolumeConditionTypeScheduled, ConditionStatusFalse,
		VolumeConditionReasonReplicaSchedulingFailure, ErrorReplicaScheduleInsufficientStorage, "t3")
	c := GetCondition(conds, VolumeConditionTypeScheduled)
	if c.Status != ConditionStatusFalse || c.LastTransitionTime != "t3" || c.Reason != VolumeConditionReasonReplicaSchedulingFailure {
		t.Fatalf("changed condition = %+v", c)
	}
	if got := GetCondition(conds, VolumeConditionTypeRestore); got.Status != ConditionStatusUnknown {
		t.Fatalf("missing condition status = %q, want Unknown", got.Status)
	}
}

func TestAttachmentTickets(t *testing.T) {
	id := GetAttachmentTicketID(AttacherTypeCSIAttacher, "pv-1")
	if id != "csi-attacher-pv-1" {
		t.Fatalf("ticket id = %q", id)
	}
	if long := GetAttachmentTicketID(AttacherTypeLonghornAPI, strings.Repeat("x", 300)); len(long) != 253 {
		t.Fatalf("long ticket id length = %d, want 253", len(long))
	}
	if GetAttacherPriorityLevel(AttacherTypeVolumeRestoreController) != 2000 ||
		GetAttacherPriorityLevel(AttacherTypeLonghornAPI) != 1000 ||
		GetAttacherPriorityLevel(AttacherTypeCSIAttacher) != 900 ||
		GetAttacherPriorityLevel(AttacherTypeBackupController) != 800 ||
		GetAttacherPriorityLevel("nobody") != 0 {
		t.Fatal("attacher priorities differ from Longhorn's")
	}
	va := &VolumeAttachment{
		Spec:   VolumeAttachmentSpec{AttachmentTickets: map[string]*AttachmentTicket{id: {ID: id, Generation: 2}}},
		Status: VolumeAttachmentStatus{AttachmentTicketStatuses: map[string]*AttachmentTicketStatus{id: {ID: id, Generation: 1, Satisfied: true}}},
	}
	if IsAttachmentTicketSatisfied(id, va) {
		t.Fatal("a ticket satisfied for an older generation must not count")
	}
	va.Status.AttachmentTicketStatuses[id].Generation = 2
	if !IsAttachmentTicketSatisfied(id, va) || IsAttachmentTicketSatisfied(id, nil) {
		t.Fatal("ticket satisfaction wrong")
	}
}
