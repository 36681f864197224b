package testnet

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ImpairTable is the nftables table (family inet) that Impair drops
// packets with when the kernel has no netem. Its name is not vipstack's,
// so checks for vipstack's leftover rules ignore it.
const ImpairTable = "vxchaos_loss"

// Impair drops loss percent of the host's outgoing packets and delays them
// by delay: with tc netem when netem is true, else with an nftables rule
// (`numgen random mod 100 < P drop`), which cannot delay. Zero loss and
// delay remove the impairment.
func (h *Host) Impair(loss int, delay time.Duration, netem bool) error {
	return h.ImpairWith(loss, delay, netem)
}

// ImpairWith is Impair for the host's link and devices stacked on it
// (uppers: macvlans, as FRR's vrrpd sends from). tc netem on the link
// covers them already (they transmit through its queue); the nftables
// output hook sees a packet under the device it was sent from, so the
// rule names each.
func (h *Host) ImpairWith(loss int, delay time.Duration, netem bool, uppers ...string) error {
	if loss < 0 || loss > 100 || delay < 0 {
		return fmt.Errorf("impairment %d%% loss, %v delay: want 0..100%% and a delay >= 0", loss, delay)
	}
	if netem {
		if loss == 0 && delay == 0 {
			if out, err := h.Run("tc", "qdisc", "del", "dev", h.Link, "root"); err != nil && !strings.Contains(out, "No such file") && !strings.Contains(out, "Cannot delete qdisc with handle of zero") {
				return err
			}
			return nil
		}
		args := []string{"qdisc", "replace", "dev", h.Link, "root", "netem"}
		if loss > 0 {
			args = append(args, "loss", strconv.Itoa(loss)+"%")
		}
		if delay > 0 {
			args = append(args, "delay", strconv.FormatInt(delay.Microseconds(), 10)+"us")
		}
		_, err := h.Run("tc", args...)
		return err
	}
	if delay > 0 {
		return fmt.Errorf("a %v delay needs tc netem (sch_netem), which this kernel lacks", delay)
	}
	script := lossScript(append([]string{h.Link}, uppers...), loss)
	cmd := h.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ProbeNetem reports whether the kernel has tc netem: it adds a netem
// qdisc to a throwaway veth pair in h's namespace and removes the pair.
func (h *Host) ProbeNetem() bool {
	if _, err := h.Run("ip", "link", "add", "vxprobe0", "type", "veth", "peer", "name", "vxprobe1"); err != nil {
		return false
	}
	defer h.Run("ip", "link", "del", "vxprobe0")
	_, err := h.Run("tc", "qdisc", "add", "dev", "vxprobe0", "root", "netem", "delay", "1ms")
	return err == nil
}

// lossScript is the nftables script that drops loss percent of what
// leaves by links (0: removes the table).
func lossScript(links []string, loss int) string {
	script := fmt.Sprintf("table inet %s\ndelete table inet %s\n", ImpairTable, ImpairTable)
	if loss == 0 {
		return script
	}
	match := fmt.Sprintf("numgen random mod 100 < %d ", loss)
	if loss == 100 {
		match = "" // nft refuses "< 100" against a 0-99 range
	}
	quoted := make([]string, len(links))
	for i, l := range links {
		quoted[i] = strconv.Quote(l)
	}
	oif := quoted[0]
	if len(quoted) > 1 {
		oif = "{ " + strings.Join(quoted, ", ") + " }"
	}
	return script + fmt.Sprintf("table inet %s {\n\tchain out {\n\t\ttype filter hook output priority filter; policy accept;\n\t\toifname %s %sdrop\n\t}\n}\n",
		ImpairTable, oif, match)
}
