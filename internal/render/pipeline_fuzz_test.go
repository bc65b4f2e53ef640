package render

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
)

// Route templates the random and fuzz tests start from, so that every
// termination meets hostile values: a passthrough route, for one, must
// have no path and no certificate to be admitted at all.
const (
	templateEdge = iota
	templateHTTP
	templateReencrypt
	templatePassthrough
	templates
)

func templateRouteDoc(i, template int, tc testCerts) routeDoc {
	d := newRouteDoc(i, tc)
	spec := d["spec"].(map[string]any)
	switch template {
	case templateHTTP:
		delete(spec, "tls")
	case templateReencrypt:
		tls := spec["tls"].(map[string]any)
		tls["termination"] = "reencrypt"
		tls["destinationCACertificate"] = tc.CA
	case templatePassthrough:
		delete(spec, "path")
		spec["tls"] = map[string]any{"termination": "passthrough", "insecureEdgeTerminationPolicy": "Redirect"}
		ann := d["metadata"].(map[string]any)["annotations"].(map[string]any)
		for _, k := range []string{model.AnnotationHSTSHeader, model.AnnotationCookieName, model.AnnotationCookieSameSite,
			model.AnnotationRateLimitRateHTTP, model.AnnotationRewriteTarget, model.AnnotationSetForwardedHeaders} {
			delete(ann, k) // HTTP only: they would only add warnings
		}
	}
	return d
}

// goodValues are valid values of each field; random values are made from
// them. Host and name get the route's number, to stay unique.
func goodValues(field string, i int, tc testCerts) []string {
	switch field {
	case "metadata.name":
		return []string{fmt.Sprintf("r%d", i)}
	case "metadata.namespace":
		return pipelineNamespaces
	case "spec.host":
		// "": generated from the name, or from spec.subdomain.
		return []string{fmt.Sprintf("h%d.example.com", i), fmt.Sprintf("www.h%d.example.com", i), ""}
	case "spec.subdomain":
		return []string{fmt.Sprintf("s%d", i), ""}
	case "spec.path":
		return []string{"", "/", "/api", "/a/b/", "/x.y~z"}
	case "spec.to.name", "spec.alternateBackends[0].name":
		return []string{"web", "alt"}
	case "spec.port.targetPort":
		return []string{"http", "8080"}
	case "spec.tls.termination":
		return []string{"edge", "reencrypt", "passthrough", ""}
	case "spec.tls.insecureEdgeTerminationPolicy":
		return []string{"None", "Allow", "Redirect", ""}
	case "spec.tls.certificate":
		return []string{tc.Cert}
	case "spec.tls.destinationCACertificate":
		return []string{tc.CA}
	case "spec.wildcardPolicy":
		return []string{"None", "Subdomain"}
	}
	key := strings.TrimPrefix(field, "metadata.annotations.")
	switch key {
	case model.AnnotationHealthCheckInterval:
		return []string{"3s", "500ms", "1m30s"}
	case model.AnnotationBalance:
		return []string{"roundrobin", "leastconn", "source", "random"}
	case model.AnnotationTimeout, model.AnnotationTimeoutTunnel:
		return []string{"20s", "500", "1h", "2d"}
	case model.AnnotationIPAllowlist, model.AnnotationIPWhitelist:
		return []string{"127.0.0.0/8 ::1", "10.0.0.1"}
	case model.AnnotationHSTSHeader:
		return []string{"max-age=60", "max-age=31536000;includeSubDomains;preload"}
	case model.AnnotationDisableCookies, model.AnnotationRateLimit:
		return []string{"true", "false"}
	case model.AnnotationCookieName:
		return []string{"sess", "JSESSIONID", "a.b-c_d"}
	case model.AnnotationCookieSameSite:
		return []string{"Lax", "Strict", "None"}
	case model.AnnotationRateLimitConcurrentTCP, model.AnnotationRateLimitRateTCP, model.AnnotationRateLimitRateHTTP,
		model.AnnotationPodConcurrentConnection:
		return []string{"1", "100", "99999"}
	case model.AnnotationRewriteTarget:
		return []string{"/", "/v2", "/x/"}
	case model.AnnotationSetForwardedHeaders:
		return []string{"append", "replace", "never", "if-none"}
	}
	return []string{"x"}
}

// hostilePieces are what random values are made of: everything with a
// meaning to HAProxy's config, map or log-format parsers, to YAML, or to
// URLs, and bytes no parser should see.
var hostilePieces = []string{
	"'", `"`, `\`, "#", " ", "\t", "\n", "\r", "\x00", "\x01", "\x7f",
	"%", "%%", "%[src]", "%20", "$HOME", "${X}", ";", "{", "}", "|", "<", ">", "^", "`",
	"[", "]", "?", "&", "=", ",", ":", "*", "/", "//", "..", `\1`, "-", ".", "@", "+",
	"é", "\u2028", "😀", "\ufeff", "a", "0",
}

// randomValue returns a good value, a good value with hostile pieces
// inserted, a string of hostile pieces, or a very long value.
func randomValue(r *rand.Rand, good []string) string {
	g := good[r.IntN(len(good))]
	piece := func() string { return hostilePieces[r.IntN(len(hostilePieces))] }
	switch n := r.IntN(10); {
	case n < 3:
		return g
	case n < 7:
		for k := r.IntN(3) + 1; k > 0; k-- {
			at := r.IntN(len(g) + 1) // good values are ASCII: any byte is a boundary
			g = g[:at] + piece() + g[at:]
		}
		return g
	case n < 9:
		var b strings.Builder
		for k := r.IntN(10) + 1; k > 0; k-- {
			b.WriteString(piece())
		}
		return b.String()
	default:
		return g + strings.Repeat(piece(), 1000+r.IntN(19000))
	}
}

// randomRouteDoc is route i from a random template with each field, with
// probability 1/8, set to a random value.
func randomRouteDoc(r *rand.Rand, i int, tc testCerts) routeDoc {
	d := templateRouteDoc(i, r.IntN(templates), tc)
	for _, f := range routeFields {
		if r.IntN(8) == 0 {
			f.set(d, randomValue(r, goodValues(f.name, i, tc)))
		}
	}
	return d
}

// TestPipelineRandom runs seeded random routes through the loader, render
// and haproxy -c, in batches of many routes to one config: whatever the
// model admits must render and load. FuzzPipeline explores further.
func TestPipelineRandom(t *testing.T) {
	tc := loadTestCerts(t)
	const (
		batches   = 4
		batchSize = 50
	)
	r := rand.New(rand.NewPCG(9, 2026))
	admitted, total := 0, 0
	for b := range batches {
		docs := make([]routeDoc, batchSize)
		for i := range docs {
			docs[i] = randomRouteDoc(r, b*batchSize+i, tc)
		}
		t.Run(fmt.Sprintf("batch%d", b), func(t *testing.T) {
			res := pipeline(t, tc, docs)
			admitted += len(res.Desired.Routes)
			total += len(docs)
		})
	}
	t.Logf("%d of %d random routes admitted", admitted, total)
	// Mostly hostile input that is all refused would prove nothing.
	if admitted < total/5 {
		t.Errorf("only %d of %d random routes admitted: the generator no longer exercises render", admitted, total)
	}
}

// FuzzPipeline sets up to two fields of a route to any strings; whatever
// the model admits must render, keep map lines within the limit, and pass
// haproxy -c. The seed corpus puts each hostile piece into each field.
func FuzzPipeline(f *testing.F) {
	for i := range routeFields {
		p := hostilePieces[i%len(hostilePieces)]
		f.Add(uint8(i), "/a"+p+"b", uint8(0), "r0", uint8(i%templates))
	}
	path, rewrite, cookie := uint8(3), uint8(0), uint8(0)
	for i, fld := range routeFields {
		switch fld.name {
		case "metadata.annotations." + model.AnnotationRewriteTarget:
			rewrite = uint8(i)
		case "metadata.annotations." + model.AnnotationCookieName:
			cookie = uint8(i)
		}
	}
	f.Add(path, `/it's/"q"/\b`, rewrite, "/v%27", uint8(templateEdge))
	f.Add(path, "/"+strings.Repeat("x", 16500), cookie, "a'b#c$d", uint8(templateHTTP))
	f.Add(cookie, "it's", rewrite, `/x\y`, uint8(templateReencrypt))
	tc := loadTestCerts(f)
	f.Fuzz(func(t *testing.T, field1 uint8, value1 string, field2 uint8, value2 string, template uint8) {
		d := templateRouteDoc(0, int(template)%templates, tc)
		routeFields[int(field1)%len(routeFields)].set(d, value1)
		routeFields[int(field2)%len(routeFields)].set(d, value2)
		res := model.NewLoader().Load(pipelineFiles(t, []routeDoc{d}))
		if res.Desired == nil || len(res.Desired.Routes) == 0 {
			return // rejected: nothing reaches HAProxy
		}
		pipeline(t, tc, []routeDoc{d})
	})
}
