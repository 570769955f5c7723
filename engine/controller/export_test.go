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
