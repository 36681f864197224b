package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/kubetest"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestKubeFlags checks what runController and runAgent refuse before they
// touch the network.
func TestKubeFlags(t *testing.T) {
	tests := []struct {
		name     string
		run      func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) int
		args     []string
		wantCode int
		wantErr  string
	}{
		{name: "controller bad VRID", run: wrap(runController), args: []string{"--excluded-vrids", "1,300"}, wantCode: 2,
			wantErr: `--excluded-vrids: "300": want VRIDs from 1 to 255`},
		{name: "controller bad log level", run: wrap(runController), args: []string{"--log-level", "loud"}, wantCode: 2,
			wantErr: `--log-level "loud"`},
		{name: "controller stray argument", run: wrap(runController), args: []string{"extra"}, wantCode: 2,
			wantErr: `unexpected arguments ["extra"]`},
		{name: "controller no kubeconfig", run: wrap(runController), args: []string{"--kubeconfig", "/nonexistent"}, wantCode: 1,
			wantErr: "kubeconfig /nonexistent"},
		{name: "controller bad namespace", run: wrap(runController), args: []string{"--namespace", "Vip_Stack"}, wantCode: 2,
			wantErr: `--namespace: "Vip_Stack": a lowercase RFC 1123 label`},
		{name: "controller renew deadline past the lease", run: wrap(runController), args: []string{"--leader-elect-lease-duration", "5s", "--leader-elect-renew-deadline", "5s"}, wantCode: 2,
			wantErr: "--leader-elect-renew-deadline 5s: want less than --leader-elect-lease-duration (5s)"},
		{name: "controller retry period too long", run: wrap(runController), args: []string{"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "3s"}, wantCode: 2,
			wantErr: "--leader-elect-retry-period 3s: want less than --leader-elect-renew-deadline / 1.2 (2.5s)"},
		{name: "controller zero lease", run: wrap(runController), args: []string{"--leader-elect-lease-duration", "0s"}, wantCode: 2,
			wantErr: "want each > 0"},
		{name: "agent empty namespace", run: wrap(runAgent), args: []string{"--node-name", "n1", "--namespace", ""}, wantCode: 2,
			wantErr: `--namespace: "": `},
		{name: "agent no node", run: wrap(runAgent), args: []string{"--node-name", ""}, wantCode: 2,
			wantErr: "--node-name is required"},
		{name: "agent status not loopback", run: wrap(runAgent), args: []string{"--node-name", "n1", "--status-addr", "0.0.0.0:9653"}, wantCode: 2,
			wantErr: "loopback only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := tt.run(t.Context(), tt.args, &out, &errb); code != tt.wantCode || !strings.Contains(errb.String(), tt.wantErr) {
				t.Fatalf("code %d, stderr %q; want %d and %q", code, errb.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
}

func wrap(f func(context.Context, []string, io.Writer, io.Writer) int) func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) int {
	return func(ctx context.Context, args []string, o, e *bytes.Buffer) int { return f(ctx, args, o, e) }
}

// TestRunController runs `vipstack controller --kubeconfig` against a real
// API server until a Service has its address, then stops it.
func TestRunController(t *testing.T) {
	env := kubetest.Start(t)
	c := k8stest.Client(t, env.Config)
	k8stest.InstallCRDs(t, c)
	ctx := t.Context()
	auto := true
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vipstack-system"}},
		&v1alpha1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1alpha1.IPPoolSpec{Addresses: []string{"198.18.20.0/30"}, AutoAssign: &auto}},
		&v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Annotations: map[string]string{k8s.GroupAnnotation: "g"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	var out, errb syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runController(runCtx, []string{"--kubeconfig", env.Kubeconfig, "--metrics-addr", "127.0.0.1:0", "--excluded-vrids", "1"}, &out, &errb)
	}()
	err := testutil.Poll(60*time.Second, func() error {
		var s corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &s); err != nil {
			return err
		}
		if len(s.Status.LoadBalancer.Ingress) != 1 || s.Status.LoadBalancer.Ingress[0].IP != "198.18.20.0" {
			return fmt.Errorf("ingress %v", s.Status.LoadBalancer.Ingress)
		}
		return nil
	})
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("runController returned %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Error("runController did not stop within 30s of its context ending")
	}
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "vipstack controller starting") {
		t.Errorf("no start line in the log:\n%s", errb.String())
	}
}

// TestControllerStopsWithoutRBAC runs the controller as a ServiceAccount
// that may read nothing, so its informers never sync, and checks that it
// still returns once its context ends, saying why it did not stop
// cleanly (controller-runtime's manager alone stays in Start).
func TestControllerStopsWithoutRBAC(t *testing.T) {
	env := kubetest.Start(t)
	c := k8stest.Client(t, env.Config)
	k8stest.InstallCRDs(t, c)
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vipstack-system"}}); err != nil {
		t.Fatal(err)
	}
	kc := t.TempDir() + "/nobody.kubeconfig"
	if err := env.WriteKubeconfigAs(kc, "", "vipstack-system", "nobody"); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	health := ln.Addr().String()
	ln.Close()
	runCtx, cancel := context.WithCancel(t.Context())
	var out, errb syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runController(runCtx, []string{"--kubeconfig", kc, "--metrics-addr", "127.0.0.1:0", "--health-addr", health, "--leader-elect=false"}, &out, &errb)
	}()
	// Wait until its manager runs with informers that cannot sync.
	err = testutil.Poll(60*time.Second, func() error {
		resp, err := http.Get("http://" + health + "/readyz/informers")
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), "not synced") {
			return fmt.Errorf("/readyz/informers: %d %q", resp.StatusCode, b)
		}
		return nil
	})
	cancel()
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errb.String())
	}
	select {
	case code := <-done:
		if code != 1 {
			t.Errorf("runController returned %d, want 1 (it did not stop cleanly)", code)
		}
		if !strings.Contains(errb.String(), "check the RBAC") {
			t.Errorf("the log does not say why it exits:\n%s", errb.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("runController did not return within 60s of its context ending\nstderr:\n%s", errb.String())
	}
}
