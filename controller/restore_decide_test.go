package controller

import (
	"strings"
	"testing"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

func TestDecideEngineRestore(t *testing.T) {
	st := func(restoring bool, last, current, errMsg string) *engineapi.RestoreStatus {
		return &engineapi.RestoreStatus{IsRestoring: restoring, LastRestored: last, CurrentRestoringBackup: current, Error: errMsg}
	}
	cases := []struct {
		name string
		sts  map[string]*engineapi.RestoreStatus
		want restoreAction
		msg  string
	}{
		{"nothing observed", nil, restoreWait, ""},
		{"fresh replicas", map[string]*engineapi.RestoreStatus{"a": st(false, "", "", ""), "b": st(false, "", "", "")}, restoreStartIt, ""},
		{"one restoring", map[string]*engineapi.RestoreStatus{"a": st(true, "", "b1", ""), "b": st(false, "b1", "b1", "")}, restoreWait, ""},
		{"all done", map[string]*engineapi.RestoreStatus{"a": st(false, "b1", "b1", ""), "b": st(false, "b1", "b1", "")}, restoreDone, ""},
		{"one missing", map[string]*engineapi.RestoreStatus{"a": st(false, "b1", "b1", ""), "b": st(false, "", "", "")}, restoreStartIt, ""},
		{"failed", map[string]*engineapi.RestoreStatus{"a": st(false, "", "b1", "block abc is corrupt"), "b": st(false, "b1", "b1", "")}, restoreFailed, "replica a: block abc is corrupt"},
		{"old failure, newer backup", map[string]*engineapi.RestoreStatus{"a": st(false, "b0", "b0", "boom")}, restoreStartIt, ""},
	}
	for _, tc := range cases {
		got, msg := decideEngineRestore("b1", tc.sts)
		if got != tc.want || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %v %q, want %v %q", tc.name, got, msg, tc.want, tc.msg)
		}
	}
}

func TestDecideVolumeRestore(t *testing.T) {
	cases := []struct {
		name string
		in   restoreView
		want restoreDecision
	}{
		{"restoring", restoreView{Requested: "b1"}, restoreDecision{Reason: longhorn.VolumeConditionReasonRestoreInProgress}},
		{"restored", restoreView{Requested: "b1", LastRestored: "b1"}, restoreDecision{Complete: true}},
		{"failed", restoreView{Requested: "b1", Failure: "replica a: corrupt"}, restoreDecision{Reason: longhorn.VolumeConditionReasonRestoreFailure}},
		{"standby holds last", restoreView{Standby: true, Requested: "b1", LastRestored: "b1", LastBackup: "b1"},
			restoreDecision{Reason: longhorn.VolumeConditionReasonRestoreInProgress}},
		{"standby new backup", restoreView{Standby: true, Requested: "b1", LastRestored: "b1", LastBackup: "b2"},
			restoreDecision{Request: "b2", Reason: longhorn.VolumeConditionReasonRestoreInProgress}},
		{"standby still restoring", restoreView{Standby: true, Requested: "b2", LastRestored: "b1", LastBackup: "b3"},
			restoreDecision{Reason: longhorn.VolumeConditionReasonRestoreInProgress}},
		{"activated behind", restoreView{Requested: "b1", LastRestored: "b1", LastBackup: "b2"},
			restoreDecision{Request: "b2", Reason: longhorn.VolumeConditionReasonRestoreInProgress}},
		{"activated up to date", restoreView{Requested: "b2", LastRestored: "b2", LastBackup: "b2"}, restoreDecision{Complete: true}},
	}
	for _, tc := range cases {
		got := decideVolumeRestore(tc.in)
		got.Message = ""
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
