package process

// Subscription receives an Info for every change of any process: create,
// ready, stop asked, exit, and a last one with Deleted set when a process is
// gone. Events of one process arrive in order.
type Subscription struct {
	m  *Manager
	ch chan Info
	// overflowed is set (before C is closed) when the subscriber fell more than
	// Config.WatchBuffer events behind; it must re-list and subscribe again.
	overflowed bool
	closed     bool
}

// C delivers the events; it is closed by Close, by Manager.Shutdown, or on
// overflow.
func (s *Subscription) C() <-chan Info { return s.ch }

// Overflowed reports, after C was closed, whether it closed because the
// subscriber fell behind (rather than Close or Shutdown).
func (s *Subscription) Overflowed() bool {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return s.overflowed
}

// Close ends the subscription; it may be called more than once.
func (s *Subscription) Close() {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.closeSubLocked(s, false)
}

// Subscribe starts a subscription. After Shutdown the returned subscription is
// already closed.
func (m *Manager) Subscribe() *Subscription {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := &Subscription{m: m, ch: make(chan Info, m.cfg.WatchBuffer)}
	if m.closed {
		s.closed = true
		close(s.ch)
		return s
	}
	m.subs[s] = struct{}{}
	return s
}

func (m *Manager) closeSubLocked(s *Subscription, overflow bool) {
	if s.closed {
		return
	}
	s.closed, s.overflowed = true, overflow
	delete(m.subs, s)
	close(s.ch)
}

// publishLocked sends info to every subscriber without blocking; a subscriber
// whose buffer is full is closed as overflowed.
func (m *Manager) publishLocked(info Info) {
	for s := range m.subs {
		select {
		case s.ch <- info:
		default:
			m.closeSubLocked(s, true)
		}
	}
}
