package netif

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
)

// VMAC is a virtual MAC interface as keepalived's use_vmac creates it: a
// macvlan in private mode on Parent named Name, with the RFC 5798 virtual
// router MAC of a VRID (00:00:5e:00:01:VRID for IPv4, 00:00:5e:00:02:VRID
// for IPv6) and no IPv6 address of its own (addrgenmode none; an IPv6
// VMAC gets a copy of the parent's link-local address, so adverts can be
// sent from it).
type VMAC struct {
	Name, Parent string
	MAC          net.HardwareAddr
	Family       int // 4 or 6
}

// VMACAddr is the virtual router MAC address of vrid for family 4 or 6.
func VMACAddr(vrid uint8, family int) net.HardwareAddr {
	kind := byte(1)
	if family == 6 {
		kind = 2
	}
	return net.HardwareAddr{0x00, 0x00, 0x5e, 0x00, kind, vrid}
}

// String is the VMAC's ledger line: "NAME PARENT MAC FAMILY".
func (v VMAC) String() string {
	return fmt.Sprintf("%s %s %s %d", v.Name, v.Parent, v.MAC, v.Family)
}

// ParseVMAC reads a ledger line written by String.
func ParseVMAC(line string) (VMAC, error) {
	f := strings.Fields(line)
	if len(f) != 4 || (f[3] != "4" && f[3] != "6") {
		return VMAC{}, fmt.Errorf("VMAC %q: want NAME PARENT MAC FAMILY", line)
	}
	mac, err := net.ParseMAC(f[2])
	if err != nil {
		return VMAC{}, fmt.Errorf("VMAC %q: %w", line, err)
	}
	fam := 4
	if f[3] == "6" {
		fam = 6
	}
	return VMAC{Name: f[0], Parent: f[1], MAC: mac, Family: fam}, nil
}

// VMACLedger records the VMAC interfaces a process created, beside its VIP
// ledger, so that a later start removes those a crash left behind.
type VMACLedger struct{ Path string }

// VMACLedgerOf is the VMAC ledger kept beside the VIP ledger l.
func VMACLedgerOf(l Ledger) VMACLedger { return VMACLedger{Path: l.Path + ".vmac"} }

// Load reads the ledger; a missing file is an empty ledger.
func (l VMACLedger) Load() ([]VMAC, error) {
	b, err := os.ReadFile(l.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load VMAC ledger: %w", err)
	}
	var out []VMAC
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := ParseVMAC(line)
		if err != nil {
			return nil, fmt.Errorf("load VMAC ledger: %s:%d: %w", l.Path, n, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// Save replaces the ledger with vmacs atomically.
func (l VMACLedger) Save(vmacs []VMAC) error {
	var b strings.Builder
	b.WriteString("# vipstack VMAC ledger: interfaces this process created; a new start removes them.\n")
	for _, v := range vmacs {
		b.WriteString(v.String())
		b.WriteByte('\n')
	}
	if err := writeAtomic(l.Path, []byte(b.String())); err != nil {
		return fmt.Errorf("save VMAC ledger: %w", err)
	}
	return nil
}
