package lb

// halfClosed reports whether one direction of cn has ended.
func (cn *conn) halfClosed() bool { return cn.relay.up.EOF || cn.relay.down.EOF }
