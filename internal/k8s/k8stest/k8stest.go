// Package k8stest helps vipstack's Kubernetes tests: it installs the CRDs
// from deploy/, applies manifests, builds clients and polls the API. It is
// used with package kubetest, which runs the real API server.
package k8stest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/testutil"
)

// Root returns the module's root directory (where go.mod is).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("k8stest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Client returns a controller-runtime client (no cache) that knows the
// built-in types and vipstack.io/v1alpha1.
func Client(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	s, err := controller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatalf("k8stest: client: %v", err)
	}
	return c
}

// Objects reads the YAML documents of a file under deploy/.
func Objects(t testing.TB, name string) []*unstructured.Unstructured {
	t.Helper()
	path := filepath.Join(Root(t), "deploy", name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(t, path, b)
}

// Parse reads the YAML documents of b (from what, for errors), skipping
// empty ones.
func Parse(t testing.TB, what string, b []byte) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufioReader(b))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out = append(out, u)
	}
	return out
}

// Apply applies the objects with server-side apply; with dryRun the API
// server validates and admits them (schemas, CEL rules, RBAC escalation
// checks) without storing them.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, dryRun bool) error {
	var errs []error
	for _, u := range objs {
		opts := []client.ApplyOption{client.FieldOwner("vipstack-test"), client.ForceOwnership}
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...); err != nil {
			errs = append(errs, fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// InstallCRDs applies deploy/crds.yaml and waits until the API server
// serves both kinds.
func InstallCRDs(t testing.TB, c client.Client) {
	t.Helper()
	ctx := context.Background()
	ApplyCRDs(t, c, Objects(t, "crds.yaml"))
	// The client's REST mapper learns the new kinds on first use; give the
	// discovery a moment by listing until it works.
	testutil.Eventually(t, 30*time.Second, func() error {
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "vipstack.io", Version: "v1alpha1", Kind: "IPPoolList"})
		return c.List(ctx, u)
	})
}

// ApplyCRDs applies CustomResourceDefinitions and waits until the API
// server has established each.
func ApplyCRDs(t testing.TB, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	if err := Apply(ctx, c, objs, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, o := range objs {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
			if err := c.Get(ctx, client.ObjectKey{Name: o.GetName()}, u); err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			ok := false
			for _, x := range conds {
				m, _ := x.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					ok = true
				}
			}
			if !ok {
				return fmt.Errorf("CRD %s not established yet", o.GetName())
			}
		}
		return nil
	})
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
