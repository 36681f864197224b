package controller_test

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/testutil"
)

// Test1000Services creates 1,000 LoadBalancer Services at once and checks
// that every one gets an address of the pool, that no two share one, and
// that the pool's status counts them.
func Test1000Services(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 1,000 Services take a while")
	}
	h := newHarness(t)
	h.namespace("scale")
	h.node("n1", "198.18.0.11", nil)
	h.create(pool("big", true, nil, "198.18.16.0/22"))
	h.create(group("scale", "g", nil))
	h.startController(controller.Options{Workers: 8})

	const n = 1000
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				s := lbService("scale", fmt.Sprintf("s%04d", i), groupAnn("scale/g"))
				if err := h.c.Create(t.Context(), s); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	created := time.Since(began)
	var list corev1.ServiceList
	testutil.Eventually(t, 3*time.Minute, func() error {
		if err := h.c.List(t.Context(), &list, client.InNamespace("scale")); err != nil {
			return err
		}
		done := 0
		for _, s := range list.Items {
			if len(s.Status.LoadBalancer.Ingress) == 1 {
				done++
			}
		}
		if done != n {
			return fmt.Errorf("%d of %d Services have an address", done, n)
		}
		return nil
	})
	t.Logf("1,000 Services: created in %v, all with an address after %v", created.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	block := netip.MustParsePrefix("198.18.16.0/22")
	owner := map[string]string{}
	for _, s := range list.Items {
		ip := s.Status.LoadBalancer.Ingress[0].IP
		if other, dup := owner[ip]; dup {
			t.Errorf("%s is shown by %s and %s", ip, other, s.Name)
		}
		owner[ip] = s.Name
		if a, err := netip.ParseAddr(ip); err != nil || !block.Contains(a) {
			t.Errorf("%s got %s, outside the pool", s.Name, ip)
		}
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		var p v1alpha1.IPPool
		if err := h.c.Get(t.Context(), client.ObjectKey{Name: "big"}, &p); err != nil {
			return err
		}
		if p.Status.Assigned != n || p.Status.Size != 1024 {
			return fmt.Errorf("pool status: size %d assigned %d, want 1024 and %d", p.Status.Size, p.Status.Assigned, n)
		}
		return nil
	})
}
