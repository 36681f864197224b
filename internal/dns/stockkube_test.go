package dns

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/vipstack/vipstack/internal/kubetest"
)

// TestStockKubernetes runs the kubernetes plugin against a real API server
// (internal/kubetest) in stock CoreDNS and in vipstack's DNS: a ClusterIP
// Service, a headless Service with its EndpointSlice (A and SRV), a
// missing name and the schema record get the same answers from both.
func TestStockKubernetes(t *testing.T) {
	env := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	port := func(name string, p int32) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: p}
	}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{port("http", 80)}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{port("pg", 5432)}}},
	} {
		if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "db-1", Labels: map[string]string{discoveryv1.LabelServiceName: "db"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"198.18.5.1"}, Hostname: ptr.To("db-0"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"198.18.5.2"}, Hostname: ptr.To("db-1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("pg"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](5432)}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	cf := "cluster.local:PORT {\n    bind 127.0.0.1\n    kubernetes cluster.local {\n        kubeconfig " + env.Kubeconfig + "\n        pods insecure\n    }\n}\n"
	stock, ours := startBoth(t, cf)
	qs := []dns.Question{
		in("web.default.svc.cluster.local", dns.TypeA),
		in("db.default.svc.cluster.local", dns.TypeA),
		in("_pg._tcp.db.default.svc.cluster.local", dns.TypeSRV),
		in("db-0.db.default.svc.cluster.local", dns.TypeA),
		in("nosuch.default.svc.cluster.local", dns.TypeA),
		in("dns-version.cluster.local", dns.TypeTXT),
		in("198-18-5-9.default.pod.cluster.local", dns.TypeA),
	}
	// Both learn the objects through their own watches: wait until each
	// answers for the headless Service before comparing.
	for _, addr := range []string{stock, ours} {
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(ask(t, addr, qs[1]), "198.18.5.2") {
			if time.Now().After(deadline) {
				t.Fatalf("%s never answered db's endpoints:\n%s", addr, ask(t, addr, qs[1]))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The kubernetes plugin's SOA serial is the Unix time at which that
	// server last saw an object change: the two watches may see the last
	// one a second apart.
	serial := regexp.MustCompile(`(\tSOA\t\S+ \S+ )\d+ `)
	sameWith(t, func(s string) string { return serial.ReplaceAllString(s, "${1}SERIAL ") }, stock, ours, qs,
		0, "web.default.svc.cluster.local.\t5\tIN\tA\t"+web.Spec.ClusterIP,
		1, "198.18.5.1", 2, "IN\tSRV\t0 50 5432 db-0.db.default.svc.cluster.local.",
		3, "198.18.5.1", 4, "rcode NXDOMAIN", 6, "198.18.5.9")
}
