package manifest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/kubetest"
)

// TestIPFailoverServerDryRun sends the printed objects of every golden
// case to a real API server with a server-side apply dry run: the
// Deployment's schema, defaults and validation (host ports with the host
// network, probes, anti-affinity) accept them as printed.
func TestIPFailoverServerDryRun(t *testing.T) {
	env := kubetest.Start(t)
	c := k8stest.Client(t, env.Config)
	// The golden cases' namespace; the others go to "default".
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "routers"}}); err != nil {
		t.Fatal(err)
	}
	// The dry run validates: a host port other than the container port
	// on the host network is refused.
	t.Run("refused when broken", func(t *testing.T) {
		objs, err := NewIPFailover(goldenCases()[0].in)
		if err != nil {
			t.Fatal(err)
		}
		objs.Deployment.Spec.Template.Spec.Containers[0].Ports[0].HostPort++
		var b bytes.Buffer
		if err := Encode(&b, objs.Objects(), FormatYAML); err != nil {
			t.Fatal(err)
		}
		us := decodeObjects(t, b.Bytes(), FormatYAML)
		for _, u := range us {
			u.SetNamespace("default")
		}
		err = k8stest.Apply(t.Context(), c, us, true)
		if err == nil || !strings.Contains(err.Error(), "must match `containerPort` when `hostNetwork` is true") {
			t.Fatalf("dry run of a host port unlike the container port: %v, want it refused", err)
		}
	})
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			objs, b := encodeCase(t, tc)
			us := decodeObjects(t, b, tc.format)
			if len(us) != len(objs.Objects()) {
				t.Fatalf("decoded %d objects, printed %d", len(us), len(objs.Objects()))
			}
			for _, u := range us {
				if u.GetNamespace() == "" {
					u.SetNamespace("default") // kubectl's context would
				}
			}
			if err := k8stest.Apply(t.Context(), c, us, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// decodeObjects reads what Encode printed, as kubectl apply -f would.
func decodeObjects(t *testing.T, b []byte, format string) []*unstructured.Unstructured {
	t.Helper()
	var docs [][]byte
	if format == FormatJSON {
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			docs = append(docs, it)
		}
	} else {
		for _, doc := range strings.Split(string(b), "\n---\n") {
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, js)
		}
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(d); err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		out = append(out, u)
	}
	return out
}
