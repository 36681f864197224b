package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Formats Encode writes.
const (
	FormatYAML = "yaml"
	FormatJSON = "json"
)

// Encode writes objs as YAML documents separated by "---" (FormatYAML) or
// as one JSON List (FormatJSON), either of which `kubectl apply -f` takes.
// Fields a client fills in and the server ignores (an empty status, a null
// creationTimestamp) are left out.
func Encode(w io.Writer, objs []runtime.Object, format string) error {
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return fmt.Errorf("encode %T: %w", o, err)
		}
		prune(u)
		items = append(items, u)
	}
	var buf bytes.Buffer
	switch format {
	case FormatYAML:
		for i, u := range items {
			b, err := yaml.Marshal(u)
			if err != nil {
				return fmt.Errorf("encode YAML: %w", err)
			}
			if i > 0 {
				buf.WriteString("---\n")
			}
			buf.Write(b)
		}
	case FormatJSON:
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
		b, err := json.MarshalIndent(list, "", "  ")
		if err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	default:
		return fmt.Errorf("output format %q: want %s or %s", format, FormatYAML, FormatJSON)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// prune removes what the typed structs always carry but a manifest does
// not: status, and creationTimestamp: null in every metadata.
func prune(u map[string]any) {
	delete(u, "status")
	var walk func(m map[string]any)
	walk = func(m map[string]any) {
		for k, v := range m {
			if k == "metadata" {
				if md, ok := v.(map[string]any); ok && md["creationTimestamp"] == nil {
					delete(md, "creationTimestamp")
				}
			}
			if sub, ok := v.(map[string]any); ok {
				walk(sub)
			}
		}
	}
	walk(u)
}
