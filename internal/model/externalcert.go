package model

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// spec.tls.externalCertificate: in a file world the Secret is a file. A
// route names a core v1 Secret of type kubernetes.io/tls in its namespace,
// as on OpenShift; its tls.crt and tls.key are judged as inline material
// is, and serve the route. A Secret that changes changes the route's
// certificate, which reaches HAProxy at runtime like any certificate
// change.

// secretPair is the certificate and key a Secret gives, and the file of
// the Secret's version that gave them.
type secretPair struct{ crt, key, from string }

// fingerprint identifies the material, wherever it was read from.
func (p secretPair) fingerprint() string {
	h := sha256.Sum256([]byte(p.crt + "\x00" + p.key))
	return hex.EncodeToString(h[:])
}

// resolveExternalCertificates fills in the certificate and key of the
// valid candidates that name a Secret, or rejects them saying why. It runs
// after validation (whose results are memoized per route object, while a
// Secret may change alone) and before conflicts are decided, so a route
// whose Secret is unusable claims no host.
//
// A Secret whose new version cannot be used while its last good one (lg)
// served keeps serving that one, as any object does (DESIGN §7): the
// routes are stale, and the error is the Secret's, at its file. Only a
// Secret gone from the tree takes its routes down. It returns the
// material in force, by Secret, for the next last good state, the files
// of the stale Secrets (whose last good content a restart must keep), and
// the Secrets' diagnostics.
//
// sources are the files the last good versions of the stale Secrets
// came from: when a Secret moved to another file in the same change that
// broke it, the content its good version had there must stay saved, or a
// restart finds no good version to serve (persist.go).
func resolveExternalCertificates(cands []*candidate, secrets []Secret, lg *lastGood) (inForce map[RouteKey]secretPair, stalePaths, sources []string, ds Diagnostics) {
	var index map[RouteKey]*Secret // namespace/name of the Secret
	reported := map[RouteKey]bool{}
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
			inForce = map[RouteKey]secretPair{}
		}
		ns := c.admitted.Key.Namespace
		const f = "spec.tls.externalCertificate.name"
		fail := func(msg string) {
			c.check.add(SeverityError, c.check.pos(f, "spec.tls.externalCertificate", "spec.tls"), f, msg)
		}
		k := RouteKey{Namespace: ns, Name: name}
		s := index[k]
		if s == nil {
			fail(fmt.Sprintf("secret %q not found in namespace %q: write it there as a v1 Secret of type %s", name, ns, SecretTypeTLS))
			continue
		}
		pair, problem := secretMaterial(s)
		if lg != nil && len(lg.refusedMaterial) > 0 && problem == "" {
			if msg, ok := lg.refusedMaterial[pair.fingerprint()]; ok {
				problem = "'s certificate was refused by HAProxy: " + msg
			}
		}
		if problem != "" {
			good, ok := lg.secret(k)
			if !ok {
				fail(fmt.Sprintf("secret %q%s", name, problem))
				continue
			}
			at := s.Source.At("data")
			if !reported[k] {
				reported[k] = true
				stalePaths = append(stalePaths, s.Source.Pos.Path)
				if good.from != s.Source.Pos.Path {
					sources = append(sources, good.from)
				}
				ds = append(ds, Diagnostic{Pos: at, Severity: SeverityError,
					Message: fmt.Sprintf("secret %s/%s%s; its last good version keeps serving the routes that name it until it is fixed or removed", ns, name, problem)})
			}
			c.staleReasons = append(c.staleReasons, fmt.Sprintf("%s: secret %q%s; its last good version serves", at, name, problem))
			pair = good
		}
		inForce[k] = pair
		w := c.writable()
		w.TLS.Certificate, w.TLS.Key = pair.crt, pair.key
	}
	return inForce, stalePaths, sources, ds
}

// secretMaterial is the certificate and key of s, or why they cannot
// serve (a phrase to follow the Secret's name).
func secretMaterial(s *Secret) (secretPair, string) {
	if s.Type != SecretTypeTLS {
		return secretPair{}, fmt.Sprintf(" is of type %q; externalCertificate needs type %s", s.Type, SecretTypeTLS)
	}
	crt, key := s.Data["tls.crt"], s.Data["tls.key"]
	if crt == "" || key == "" {
		return secretPair{}, " lacks tls.crt or tls.key"
	}
	if _, p := checkCertificateAndKey(crt, key); p != nil {
		return secretPair{}, ": " + p.msg
	}
	return secretPair{crt: crt, key: key, from: s.Source.Pos.Path}, ""
}
