package iscsi

// Task management functions (RFC 7143 11.5.1) and responses (11.6.1).
const (
	tmfAbortTask      = 1
	tmfAbortTaskSet   = 2
	tmfClearACA       = 3
	tmfClearTaskSet   = 4
	tmfLUNReset       = 5
	tmfTargetWarmRst  = 6
	tmfTargetColdRst  = 7
	tmfTaskReassign   = 8
	tmfRespComplete   = 0
	tmfRespNoTask     = 1
	tmfRespNoLUN      = 2
	tmfRespNoReassign = 4
	tmfRespNotSupp    = 5
	tmfRespRejected   = 255
)

// onTMF handles a Task Management Function Request. Aborted tasks send no
// response; the TMF response goes out once they stopped running.
func (c *conn) onTMF(h *bhs) error {
	if err := c.pr.skipData(h); err != nil {
		return err
	}
	if !h.immediate() && !c.sess.acceptCmdSN(h.u32(24)) {
		return nil
	}
	fn, itt, lunField := h[1]&0x7f, h.itt(), h.lun()
	lun, u := c.t.unit(lunField)
	_, exists := c.t.units[lun]
	switch fn {
	case tmfAbortTask:
		c.abortOne(itt, h.u32(20))
	case tmfAbortTaskSet, tmfClearTaskSet:
		c.afterAbort(itt, func(t *task) bool { return t.lunField == lunField }, nil, false)
	case tmfLUNReset:
		if !exists {
			c.tmfResponse(itt, tmfRespNoLUN, false)
			return nil
		}
		c.afterAbort(itt, func(t *task) bool { return t.lunField == lunField }, u.Reset, false)
	case tmfTargetWarmRst, tmfTargetColdRst:
		cold := fn == tmfTargetColdRst
		c.afterAbort(itt, func(*task) bool { return true }, func() {
			for _, x := range c.t.units {
				x.Reset()
			}
		}, cold)
	case tmfClearACA:
		c.tmfResponse(itt, tmfRespNotSupp, false)
	case tmfTaskReassign:
		c.tmfResponse(itt, tmfRespNoReassign, false)
	default:
		c.tmfResponse(itt, tmfRespRejected, false)
	}
	return nil
}

// abortOne is ABORT TASK: "task does not exist" when it already answered.
func (c *conn) abortOne(itt, ref uint32) {
	c.mu.Lock()
	t := c.tasks[ref]
	if t == nil {
		c.mu.Unlock()
		c.tmfResponse(itt, tmfRespNoTask, false)
		return
	}
	t.abortLocked()
	delete(c.tasks, ref)
	c.mu.Unlock()
	c.execWG.Add(1)
	go func() {
		defer c.execWG.Done()
		t.wg.Wait()
		c.tmfResponse(itt, tmfRespComplete, true)
	}()
}

// afterAbort aborts this connection's tasks that match, waits for the
// running ones, runs then (a reset) and answers "function complete"; with
// closeAll (TARGET COLD RESET) it then drops every connection.
func (c *conn) afterAbort(itt uint32, match func(*task) bool, then func(), closeAll bool) {
	var running []*task
	c.mu.Lock()
	for ref, t := range c.tasks {
		if match(t) {
			t.abortLocked()
			delete(c.tasks, ref)
			running = append(running, t)
		}
	}
	c.mu.Unlock()
	c.execWG.Add(1)
	go func() {
		defer c.execWG.Done()
		for _, t := range running {
			t.wg.Wait()
		}
		if then != nil {
			then()
		}
		c.tmfResponse(itt, tmfRespComplete, true)
		if closeAll {
			c.closeAfterQueued()
		}
	}()
}

// tmfResponse queues a TMF response; inline is false on the reader goroutine.
func (c *conn) tmfResponse(itt uint32, resp byte, inline bool) {
	p := newOut()
	p.hdr[0] = opTaskMgmtResp
	p.hdr[1] = 0x80
	p.hdr[2] = resp
	p.hdr.setU32(16, itt)
	p.advance = true
	c.q.push(p, inline)
}

// closeAfterQueued closes the other connections now and this one after
// everything queued so far was written (RFC 7143 11.5.1: TARGET COLD RESET
// drops all connections).
func (c *conn) closeAfterQueued() {
	for _, x := range c.t.allConns() {
		if x != c {
			x.abort()
		}
	}
	p := newOut()
	p.kind = outMarker
	p.after = c.abort
	c.q.push(p, true)
}
