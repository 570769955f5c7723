package controller

// DirectWrites returns how many writes the engine wrote into the local
// replica at addr itself (dataconn.Client.WriteDirect); -1 when the
// replica is not listed or has no data connection. For tests.
func DirectWrites(c *Controller, addr string) int64 {
	b := c.find(addr)
	if b == nil || b.data == nil {
		return -1
	}
	return b.data.DirectWrites()
}

// SetSnapshotHeld makes f run as soon as a snapshot holds the volume's I/O,
// until the test ends. For tests.
func SetSnapshotHeld(t interface{ Cleanup(func()) }, f func()) {
	snapshotHeld = f
	t.Cleanup(func() { snapshotHeld = nil })
}
