package lbdaemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/vipstack/vipstack/internal/lbkernel"
	"github.com/vipstack/vipstack/internal/redirect"
)

// Serve runs until ctx is done, then drains the connections for at most
// drain, or until softStop fires (haproxy's SIGUSR1), then lets them end
// by themselves (SoftStop). It applies a reload for each reason read from
// reloads.
func (d *Daemon) Serve(ctx context.Context, reloads <-chan string, softStop <-chan os.Signal, drain time.Duration) {
	for {
		select {
		case <-ctx.Done():
			d.log.Info("draining", "timeout", drain)
			d.shutdown(drain)
			d.log.Info("vipstack lb stopped")
			return
		case <-softStop:
			d.log.Info("soft stop (SIGUSR1): not accepting connections; those open run to their end (SIGTERM or SIGINT gives them --drain-timeout)")
			d.softStop(ctx, drain)
			d.log.Info("vipstack lb stopped")
			return
		case why := <-reloads:
			_ = d.Reload(why)
		}
	}
}

// Reload applies the configuration file as it is now, or nothing: a
// refused reload is logged and counted, and the running configuration
// stays in force.
func (d *Daemon) Reload(why string) error {
	d.log.Info("reloading", "reason", why, "config", d.opts.ConfigPath)
	if err := d.reload(); err != nil {
		d.log.Error("reload failed: keeping the running configuration", "err", err)
		d.metrics.refused()
		return err
	}
	d.metrics.applied()
	return nil
}

func (d *Daemon) reload() error {
	next, err := loadIn(d.root, d.opts.ConfigPath, d.cfgAbs)
	if err != nil {
		return err
	}
	for _, w := range next.Warnings {
		d.log.Warn(w)
	}
	r := d.running
	if next.PIDFile != r.PIDFile || next.User != r.User || next.Group != r.Group || next.NbThread != r.NbThread || next.Chroot != r.Chroot {
		d.log.Warn("pidfile, user, group, chroot and nbthread apply at start: restart vipstack lb for the new ones")
	}
	port := d.rdPort
	if d.rd != nil {
		// Refused before anything changes: applied, it would leave
		// the VIP redirected to a port nobody serves.
		if port, err = redirect.Port(next, d.opts.Redirect); err != nil {
			return fmt.Errorf("--redirect: %w", err)
		}
	}
	var plan *lbkernel.Plan
	if d.kp != nil {
		// Refused before anything changes, as a bad file is.
		if plan, err = d.kp.Build(next); err != nil {
			return err
		}
	}
	change, err := d.sockets.Prepare(next.StatsSockets)
	if err != nil {
		return err
	}
	m := &redirect.Mover{LB: d.lb, Clock: d.clk, Log: d.log}
	move, err := m.Open(d.running, next, d.rdPort, port)
	if err != nil {
		change.Abort()
		return err
	}
	change.Commit()
	d.running = next
	var moved []<-chan struct{}
	if port != d.rdPort {
		d.log.Info("the redirect follows the frontend to its new port", "old", d.rdPort, "new", port)
		moved = append(moved, d.rd.Retarget(redirect.New(d.opts.Redirect, port)))
		d.rdPort = port
	}
	err = move.Finish(moved...)
	if plan != nil {
		if kerr := d.kp.Install(plan); kerr != nil {
			d.log.Error("kernel path: the new configuration's table could not be installed; the previous one stays", "err", kerr)
			err = errors.Join(err, kerr)
		}
	}
	return err
}

// shutdown takes the redirect down first (clients of the VIP then reach
// the node's own API server directly), then drains.
func (d *Daemon) shutdown(drain time.Duration) {
	d.stopRedirect()
	d.stopKernel()
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := d.lb.Shutdown(ctx); err != nil {
		d.log.Warn("drain timed out; closed the remaining connections", "timeout", drain)
	}
}

// stopKernel removes the kernel path's table: new connections reach the
// relay's listeners, which close as haproxy's do; connections the kernel
// NATed run on in conntrack, which the drain does not see.
func (d *Daemon) stopKernel() {
	if d.kp != nil {
		d.kp.Remove()
	}
}

func (d *Daemon) stopRedirect() {
	if d.rdRuns {
		d.rd.Stop()
	}
}

// softStop is haproxy's soft stop (SIGUSR1): the redirect goes, the LB
// stops accepting and sends its "Proxy NAME stopped" lines, and the
// connections run to their end, however long they take, as in haproxy
// without hard-stop-after; once ctx is done (SIGTERM, SIGINT), they have
// drain more, after which the LB closes them as haproxy's hard-stop-after
// does ("Proxy NAME hard-stopped ..." lines).
func (d *Daemon) softStop(ctx context.Context, drain time.Duration) {
	d.stopRedirect()
	d.stopKernel()
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if hs := d.lb.HardStopAfter(); hs > 0 {
		// haproxy's hard-stop-after: the connections still open then
		// are closed.
		t := d.clk.AfterFunc(hs, func() {
			d.log.Info("hard-stop-after: closing the remaining connections", "after", hs)
			cancel()
		})
		defer t.Stop()
	}
	go func() {
		select {
		case <-sctx.Done():
			return
		case <-ctx.Done():
		}
		d.log.Info("draining", "timeout", drain)
		t := d.clk.NewTimer(drain)
		defer t.Stop()
		select {
		case <-sctx.Done():
		case <-t.C():
			cancel()
		}
	}()
	if err := d.lb.SoftStop(sctx); err != nil {
		d.log.Warn("drain timed out; closed the remaining connections", "timeout", drain)
	}
}
