package transport

import (
	"net"
	"syscall"
	"testing"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestReadBufferGrown: each raw socket asks for a receive buffer that
// holds a flood's worth of packets (the kernel reports double the size
// asked, its bookkeeping included).
func TestReadBufferGrown(t *testing.T) {
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsrb"})
	for _, fam := range []int{4, 6} {
		var got int
		if err := topo.Hosts[0].Do(func() error {
			c, err := Listen(fam)
			if err != nil {
				return err
			}
			defer c.Close()
			var pc net.PacketConn
			switch c := c.(type) {
			case *conn4:
				pc = c.pc
			case *conn6:
				pc = c.pc
			}
			rc, err := pc.(syscall.Conn).SyscallConn()
			if err != nil {
				return err
			}
			var serr error
			if err := rc.Control(func(fd uintptr) {
				got, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
			}); err != nil {
				return err
			}
			return serr
		}); err != nil {
			t.Fatal(err)
		}
		if got < readBuffer {
			t.Errorf("IPv%d: SO_RCVBUF is %d, want at least %d", fam, got, readBuffer)
		}
	}
}
