package lb

// countAbort counts, on the server a connection reached or was
// connecting to, how it ended when that was an abort, as haproxy 2.6.12
// counts its servers' and backends' cli_abrt, srv_abrt and eresp in TCP
// mode (measured, TestConnLogMatchesHaproxy and
// TestClientLeavesWhileConnectingMatchesHaproxy):
//
//	CD  the client reset, relaying or while connecting: cli_abrt
//	cD  timeout client: cli_abrt
//	SD  the server reset: srv_abrt and eresp
//	sD  timeout server: srv_abrt
//
// An end of file on either side (--), a client that left without a byte
// while connecting (CC), a failed connect (SC, sC) and a connection the
// runtime API or a forced shutdown closed (K-, KC) count nothing.
func (s *server) countAbort(term [2]byte) {
	switch term {
	case [2]byte{'C', 'D'}, [2]byte{'c', 'D'}:
		s.cliAbrt.Add(1)
	case [2]byte{'S', 'D'}:
		s.srvAbrt.Add(1)
		s.eresp.Add(1)
	case [2]byte{'s', 'D'}:
		s.srvAbrt.Add(1)
	}
}
