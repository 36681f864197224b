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
	script := fmt.Sprintf("table inet %s\ndelete table inet %s\n", ImpairTable, ImpairTable)
	if loss > 0 {
		match := fmt.Sprintf("numgen random mod 100 < %d ", loss)
		if loss == 100 {
			match = "" // nft refuses "< 100" against a 0-99 range
		}
		script += fmt.Sprintf("table inet %s {\n\tchain out {\n\t\ttype filter hook output priority filter; policy accept;\n\t\toifname %q %sdrop\n\t}\n}\n",
			ImpairTable, h.Link, match)
	}
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
