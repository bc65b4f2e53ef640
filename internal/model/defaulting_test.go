package model

import "testing"

// TestTerminationDefaulting follows openshift/library-go's
// SetDefaults_TLSConfig: capitalised terminations are read in lowercase,
// and a tls block without termination (nor destinationCACertificate) is
// edge; each gets a note.
func TestTerminationDefaulting(t *testing.T) {
	for _, tt := range []struct {
		in   Termination
		want Termination
		diag string
	}{
		{"", TerminationEdge, `r.yaml:10:3: note: spec.tls.termination: termination is not set: defaulted to edge, as OpenShift does`},
		{"Edge", TerminationEdge, `r.yaml:10:3: note: spec.tls.termination: termination "Edge" is read as "edge", as OpenShift does`},
		{"Reencrypt", TerminationReencrypt, `r.yaml:10:3: note: spec.tls.termination: termination "Reencrypt" is read as "reencrypt", as OpenShift does`},
		{"Passthrough", TerminationPassthrough, `r.yaml:10:3: note: spec.tls.termination: termination "Passthrough" is read as "passthrough", as OpenShift does`},
		{"edge", TerminationEdge, ""},
	} {
		t.Run(string(tt.in), func(t *testing.T) {
			r := testRoute("ns", "r", "www.example.com")
			r.Spec.TLS = &TLSConfig{Termination: tt.in}
			r.Source = defaultingSource()
			s := DefaultSettings()
			ar, c := validateRoute(&r, &s)
			var want []string
			if tt.diag != "" {
				want = []string{tt.diag}
			}
			equalLines(t, c.diags, want)
			if c.bad || ar.Termination != tt.want {
				t.Errorf("termination %q: admitted as %q (rejected %v), want %q", tt.in, ar.Termination, c.bad, tt.want)
			}
			if r.Spec.TLS.Termination != tt.in {
				t.Errorf("the route object was changed: termination %q", r.Spec.TLS.Termination)
			}
		})
	}
	// "EDGE" is no spelling OpenShift defaults: still rejected.
	r := testRoute("ns", "r", "www.example.com")
	r.Spec.TLS = &TLSConfig{Termination: "EDGE"}
	r.Source = defaultingSource()
	s := DefaultSettings()
	_, c := validateRoute(&r, &s)
	equalLines(t, c.diags, []string{`r.yaml:10:3: error: spec.tls.termination: termination "EDGE" is not one of edge, reencrypt, passthrough`})
}
