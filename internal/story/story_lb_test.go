//go:build linux

package story_test

import (
	"testing"

	"github.com/vipstack/vipstack/internal/demo"
)

// TestStoryLBPreference plays seed 000's rule for the API VIP on three
// masters (40, +20 while the node's LB answers, +5 while its LB or its API
// answers): a master whose LB is down loses the VIP to one whose LB is up;
// with every LB down, a master whose API still answers keeps it; and a
// working LB (which balances over every master's API) beats an API alone.
// "LB down" is an nftables rule rejecting loopback connections to the LB
// port, so the node's own chk_ocp_lb fails while its API still answers.
func TestStoryLBPreference(t *testing.T) {
	c := startCluster(t, demo.Spec{Masters: 3})
	lb := func(up bool, nodes ...string) func(*demo.Cluster) error {
		return func(c *demo.Cluster) error {
			for _, n := range nodes {
				if err := c.Node(n).SetLB(up); err != nil {
					return err
				}
			}
			return nil
		}
	}
	api := func(up bool, node string) func(*demo.Cluster) error {
		return func(c *demo.Cluster) error { return c.Node(node).SetAPI(up) }
	}
	playSteps(t, c, demo.KindAPI, []storyStep{
		{
			name:   "only master-2's LB answers: it holds the VIP",
			do:     lb(false, "master-0", "master-1"),
			prio:   map[string]int{"master-0": 45, "master-1": 45, "master-2": 65},
			holder: "master-2",
		},
		{
			name:   "master-2's LB fails too: every LB is down, and master-2, whose API answers, keeps the VIP",
			do:     lb(false, "master-2"),
			prio:   map[string]int{"master-0": 45, "master-1": 45, "master-2": 45},
			holder: "master-2", keeps: true,
		},
		{
			name:   "master-1's API stops: master-2 still keeps the VIP",
			do:     api(false, "master-1"),
			prio:   map[string]int{"master-0": 45, "master-1": 40, "master-2": 45},
			holder: "master-2", keeps: true,
		},
		{
			name:   "master-2's API stops: master-0, the only master whose API answers, takes the VIP",
			do:     api(false, "master-2"),
			prio:   map[string]int{"master-0": 45, "master-1": 40, "master-2": 40},
			holder: "master-0",
		},
		{
			name:   "master-1's LB answers again (it balances to master-0's API): master-1 takes the VIP over master-0's API alone",
			do:     lb(true, "master-1"),
			prio:   map[string]int{"master-0": 45, "master-1": 65, "master-2": 40},
			holder: "master-1",
		},
	})
}
