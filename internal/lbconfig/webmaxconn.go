package lbconfig

// webMaxConn checks a monitor or stats section's own maxconn.
func (v *validator) webMaxConn(key string, n int) {
	if n < 0 {
		v.fail(v.pos(ItemKey(key, "maxconn"), key), key, "maxconn",
			"maxconn %d is negative (accepted: a number of clients, or 0 for vipstack's own cap)", n)
	}
}
