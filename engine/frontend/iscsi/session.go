package iscsi

import (
	"fmt"
	"sync/atomic"

	"github.com/longhorn-go/longhorn/engine/frontend/iscsi/scsi"
)

// cmdWindow is the command window: MaxCmdSN = ExpCmdSN + cmdWindow - 1
// (RFC 7143 4.2.2.1), the number of commands an initiator may have queued.
const cmdWindow = 128

// session is one iSCSI session (one connection, MaxConnections=1).
type session struct {
	tsih          uint16
	initiatorName string
	isid          [6]byte
	discovery     bool
	nexus         scsi.Nexus
	expCmdSN      atomic.Uint32
	conn          *conn // guarded by Target.mu
	// superseded is set when a newer login reinstated this session: the
	// nexus loss was already handled then.
	superseded bool
}

// seq returns ExpCmdSN and MaxCmdSN for outgoing PDUs.
func (s *session) seq() (uint32, uint32) {
	e := s.expCmdSN.Load()
	return e, e + cmdWindow - 1
}

// acceptCmdSN applies the CmdSN rules to a non-immediate request (RFC 7143
// 4.2.2.1, 3.2.2.1): a CmdSN outside [ExpCmdSN, MaxCmdSN] is silently
// ignored; one inside advances ExpCmdSN past it. Only the reader calls it.
func (s *session) acceptCmdSN(sn uint32) bool {
	exp := s.expCmdSN.Load()
	if sn-exp >= cmdWindow { // serial arithmetic: below exp or above max
		return false
	}
	s.expCmdSN.Store(sn + 1)
	return true
}

func initiatorPort(name string, isid [6]byte) string {
	return fmt.Sprintf("%s,i,0x%012x", name, isid[:])
}

// bindSession attaches a logged-in connection to a new or existing session
// (RFC 7143 6.3.5: TSIH 0 with a known ISID reinstates the old session).
// It returns a login status.
func (t *Target) bindSession(c *conn, ls *loginState, cmdSN uint32) (*session, uint16) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.running {
		return nil, loginTargetError
	}
	if ls.tsih != 0 {
		s := t.sessions[ls.tsih]
		if s == nil || s.initiatorName != ls.initiatorName || s.isid != ls.isid || s.discovery != ls.discovery {
			return nil, loginNoSession
		}
		// connection reinstatement at ErrorRecoveryLevel 0: the old
		// connection's tasks are aborted and the new one takes over.
		if s.conn != nil && s.conn != c {
			s.conn.abort()
		}
		s.conn = c
		return s, loginSuccess
	}
	if !ls.discovery {
		for _, old := range t.sessions {
			if !old.discovery && old.initiatorName == ls.initiatorName && old.isid == ls.isid {
				t.dropSessionLocked(old)
				if old.conn != nil {
					old.conn.abort()
				}
			}
		}
	}
	s := &session{tsih: t.newTSIHLocked(), initiatorName: ls.initiatorName, isid: ls.isid, discovery: ls.discovery, conn: c}
	s.nexus = scsi.Nexus{Port: initiatorPort(ls.initiatorName, ls.isid), InitiatorName: ls.initiatorName, ISID: fmt.Sprintf("%012x", ls.isid[:])}
	s.expCmdSN.Store(cmdSN)
	t.sessions[s.tsih] = s
	if !s.discovery {
		for _, u := range t.units {
			u.AddNexus(&s.nexus)
		}
	}
	return s, loginSuccess
}

func (t *Target) newTSIHLocked() uint16 {
	for {
		t.nextTSIH++
		if t.nextTSIH == 0 {
			continue
		}
		if _, used := t.sessions[t.nextTSIH]; !used {
			return t.nextTSIH
		}
	}
}

// dropSessionLocked removes s and tells every LU its I_T nexus is gone.
func (t *Target) dropSessionLocked(s *session) {
	if t.sessions[s.tsih] == s {
		delete(t.sessions, s.tsih)
	}
	if s.superseded || s.discovery {
		return
	}
	s.superseded = true
	for _, u := range t.units {
		u.NexusLost(&s.nexus)
	}
}

// connClosed is called when c ended; the session ends with its only
// connection (ErrorRecoveryLevel 0: no connection recovery).
func (t *Target) connClosed(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := c.sess
	if s == nil || s.conn != c {
		return
	}
	s.conn = nil
	t.dropSessionLocked(s)
}

// allSessions returns every normal session's connection (for resets).
func (t *Target) allConns() []*conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*conn, 0, len(t.conns))
	for c := range t.conns {
		out = append(out, c)
	}
	return out
}
