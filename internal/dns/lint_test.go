package dns

import "testing"

// TestLintTemplateAccepts: template lines the lint cannot render without a
// query (they use .Match, .Group, .Remote or the parseInt function), or
// that render as records, pass Validate; CoreDNS checks the rest.
func TestLintTemplateAccepts(t *testing.T) {
	for _, tt := range []struct{ name, corefile string }{
		{"the seeds' form", ".:0 {\n    template IN A example.com {\n        match .*.apps.example.com\n        answer \"{{ .Name }} 60 in {{ .Type }} 198.18.0.7\"\n        fallthrough\n    }\n}\n"},
		{"no zone, type ANY", ".:0 {\n    template ANY ANY {\n        answer \"{{ .Name }} 60 IN A 198.18.0.7\"\n    }\n}\n"},
		{"IPv6 and zone apex", ".:0 {\n    template IN AAAA example.com {\n        answer \"{{ .Zone }} 60 IN AAAA fd00:bb::5\"\n    }\n}\n"},
		{"match groups", ".:0 {\n    template IN A example.com {\n        match ^ip-(?P<a>[0-9]+)-(?P<b>[0-9]+)[.]example[.]com[.]$\n        answer \"{{ .Name }} 60 IN A 198.18.{{ .Group.a }}.{{ .Group.b }}\"\n    }\n}\n"},
		{"match index", ".:0 {\n    template IN A example.com {\n        match ^ip-([0-9]+)[.]example[.]com[.]$\n        answer \"{{ .Name }} 60 IN A 198.18.0.{{ index .Match 1 }}\"\n    }\n}\n"},
		{"parseInt", ".:0 {\n    template IN A example.com {\n        answer \"{{ .Name }} 60 IN A 198.18.0.{{ parseInt \\\"7\\\" 10 8 }}\"\n    }\n}\n"},
		{"rcode only", ".:0 {\n    template IN AAAA example.com {\n        match api.example.com\n        rcode NXDOMAIN\n        fallthrough\n    }\n}\n"},
		{"authority SOA", ".:0 {\n    template IN A example.com {\n        rcode NXDOMAIN\n        authority \"example.com. 60 IN SOA ns.example.com. hostmaster.example.com. 1 7200 1800 86400 60\"\n    }\n}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := Validate(Corefile{Contents: []byte(tt.corefile)}); err != nil {
				t.Errorf("Validate: %v\n%s", err, tt.corefile)
			}
		})
	}
}
