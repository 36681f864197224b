package redirect

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
)

// WatchFall is how many monitor polls in a row must fail before Watch
// calls the load balancer unhealthy; one 200 calls it healthy again (the
// balancer's own monitor already has its servers' fall and rise).
const WatchFall = 2

// Watch is the part of OpenShift's haproxy-monitor that follows the load
// balancer's monitor URI: it GETs url every interval (each GET bounded by
// the interval) and calls set(true) when it answers 200, set(false) after
// WatchFall polls in a row that did not, until ctx ends. The first poll is
// at once; set is called on every change and once for the first verdict.
func Watch(ctx context.Context, clk clock.Clock, url string, interval time.Duration, set func(healthy bool), log *slog.Logger) {
	client := &http.Client{Timeout: interval}
	var healthy, known bool
	fails := 0
	for {
		ok, why := poll(ctx, client, url)
		switch {
		case ok:
			fails = 0
			if !healthy || !known {
				log.Info("load balancer monitor answers 200: redirecting the VIP to it", "monitor", url)
				healthy, known = true, true
				set(true)
			}
		default:
			fails++
			if !known || (healthy && fails >= WatchFall) {
				log.Warn("load balancer monitor does not answer 200: the VIP goes to this node's own port", "monitor", url, "reason", why, "polls", fails)
				healthy, known = false, true
				set(false)
			}
		}
		t := clk.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// poll GETs url once: true for a 200 answer, else why not.
func poll(ctx context.Context, client *http.Client, url string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return false, resp.Status
	}
	return true, ""
}
