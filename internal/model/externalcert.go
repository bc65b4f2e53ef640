package model

import "fmt"

// spec.tls.externalCertificate: in a file world the Secret is a file. A
// route names a core v1 Secret of type kubernetes.io/tls in its namespace,
// as on OpenShift; its tls.crt and tls.key are judged as inline material
// is, and serve the route. A Secret that changes changes the route's
// certificate, which reaches HAProxy at runtime like any certificate
// change.

// resolveExternalCertificates fills in the certificate and key of the
// valid candidates that name a Secret, or rejects them saying why. It runs
// after validation (whose results are memoized per route object, while a
// Secret may change alone) and before conflicts are decided, so a route
// whose Secret is unusable claims no host.
func resolveExternalCertificates(cands []*candidate, secrets []Secret) {
	var index map[RouteKey]*Secret // namespace/name of the Secret
	for _, c := range cands {
		name := c.admitted.TLS.ExternalCertificate
		if c.check.bad || name == "" {
			continue
		}
		if index == nil {
			index = make(map[RouteKey]*Secret, len(secrets))
			for i := range secrets {
				s := &secrets[i]
				index[RouteKey{Namespace: s.Meta.Namespace, Name: s.Meta.Name}] = s
			}
		}
		ns := c.admitted.Key.Namespace
		const f = "spec.tls.externalCertificate.name"
		fail := func(format string, args ...any) {
			c.check.add(SeverityError, c.check.pos(f, "spec.tls.externalCertificate", "spec.tls"), f, fmt.Sprintf(format, args...))
		}
		s := index[RouteKey{Namespace: ns, Name: name}]
		switch {
		case s == nil:
			fail("secret %q not found in namespace %q: write it there as a v1 Secret of type %s", name, ns, SecretTypeTLS)
			continue
		case s.Type != SecretTypeTLS:
			fail("secret %q is of type %q; externalCertificate needs type %s", name, s.Type, SecretTypeTLS)
			continue
		}
		crt, key := s.Data["tls.crt"], s.Data["tls.key"]
		if crt == "" || key == "" {
			fail("secret %q lacks tls.crt or tls.key", name)
			continue
		}
		if _, p := checkCertificateAndKey(crt, key); p != nil {
			fail("secret %q: %s", name, p.msg)
			continue
		}
		w := c.writable()
		w.TLS.Certificate, w.TLS.Key = crt, key
	}
}
