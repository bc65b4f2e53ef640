package render

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/haroute/haroute/internal/model"
)

// Edge settings of the RouterConfig that the frontends carry beyond
// routing: client certificates, and what goes with them.

// checkEdgeInput refuses edge settings render cannot write.
func checkEdgeInput(in Input) error {
	s := &in.Desired.Router
	if c := s.ClientTLS; c != nil {
		if len(in.ClientCA) == 0 {
			return errors.New("client certificates are asked for but no client CA was given")
		}
		if c.Verify != "required" && c.Verify != "optional" {
			return errors.New("client certificate verify must be required or optional")
		}
		if err := checkQuotable("allowed subject patterns", c.SubjectFilter); err != nil {
			return err
		}
	}
	if !validForwarded[s.ForwardedHeaderPolicy] {
		return fmt.Errorf("unknown forwarded header policy %q", s.ForwardedHeaderPolicy)
	}
	for _, a := range append(slices.Clip(s.RequestHeaderActions), s.ResponseHeaderActions...) {
		if err := checkQuotable("header action name", a.Name); err != nil {
			return err
		}
		if err := checkQuotable("header action value", a.Value); err != nil {
			return err
		}
	}
	for code := range in.ErrorPages {
		if _, ok := model.ErrorPageFiles[code]; !ok {
			return fmt.Errorf("no custom error page is served for status %d", code)
		}
	}
	for _, t := range s.CompressionMIMETypes {
		if err := checkQuotable("compression MIME type", t); err != nil {
			return err
		}
	}
	if u := s.UniqueID; u != nil {
		if err := checkQuotable("unique id header", u.Header); err != nil {
			return err
		}
		if err := checkQuotable("unique id format", u.Format); err != nil {
			return err
		}
	}
	return nil
}

// clientVerify is what the TLS bind adds to ask clients for a
// certificate (spec.clientTLS). crt-list entries inherit it.
func clientVerify(in Input) string {
	c := in.Desired.Router.ClientTLS
	if c == nil {
		return ""
	}
	return " verify " + c.Verify + " ca-file " + in.Dir + "/" + ClientCAFile
}

// clientCertHeaderNames are the headers OpenShift passes a client
// certificate's details in.
var clientCertHeaderNames = []string{
	"X-SSL", "X-SSL-Client-CN", "X-SSL-Client-DER", "X-SSL-Client-DN", "X-SSL-Client-NotAfter", "X-SSL-Client-NotBefore",
	"X-SSL-Client-SHA1", "X-SSL-Client-Serial", "X-SSL-Client-Subject", "X-SSL-Client-Verify", "X-SSL-Client-Version", "X-SSL-Issuer",
}

// clientCertHeaders writes, as OpenShift does (its %{+Q} included, which
// quotes nothing in a header value), on the TLS frontend with client
// certificates, the subject filter and the headers set from the
// certificate presented. The same headers sent by the client were
// deleted before (routingKey).
func clientCertHeaders(w *cfgWriter, s *model.Settings, tls bool) {
	c := s.ClientTLS
	if !tls || c == nil {
		return
	}
	if c.SubjectFilter != "" {
		// A client without a certificate has an empty DN: denied too,
		// as on OpenShift.
		re, _ := singleQuoted("allowed subject patterns", c.SubjectFilter, false) // checked in checkEdgeInput
		w.line("  acl cert_subject_allowed ssl_c_s_dn -m reg ", re)
		w.line("  http-request deny unless cert_subject_allowed")
	}
	w.line("  http-request set-header X-SSL                  %[ssl_fc]")
	w.line("  http-request set-header X-SSL-Client-Verify    %[ssl_c_verify]")
	w.line("  http-request set-header X-SSL-Client-Serial    %{+Q}[ssl_c_serial,hex]")
	w.line("  http-request set-header X-SSL-Client-Version   %{+Q}[ssl_c_version]")
	w.line("  http-request set-header X-SSL-Client-SHA1      %{+Q}[ssl_c_sha1,hex]")
	w.line("  http-request set-header X-SSL-Client-DN        %{+Q}[ssl_c_s_dn]")
	w.line("  http-request set-header X-SSL-Client-CN        %{+Q}[ssl_c_s_dn(cn)]")
	w.line("  http-request set-header X-SSL-Issuer           %{+Q}[ssl_c_i_dn]")
	w.line("  http-request set-header X-SSL-Client-NotBefore %{+Q}[ssl_c_notbefore]")
	w.line("  http-request set-header X-SSL-Client-NotAfter  %{+Q}[ssl_c_notafter]")
	w.line("  http-request set-header X-SSL-Client-DER       %{+Q}[ssl_c_der,base64]")
}

// uniqueID gives every request an id (spec.httpHeaders.uniqueId), sent
// to the backend in a header and available to log formats as %ID.
func uniqueID(w *cfgWriter, s *model.Settings) {
	u := s.UniqueID
	if u == nil {
		return
	}
	// Single quotes keep the format's '%' meaning and everything else
	// literal (checked in checkEdgeInput).
	f, _ := singleQuoted("unique id format", u.Format, false)
	w.line("  unique-id-format ", f)
	w.line("  unique-id-header ", cfgArg(u.Header))
}

// forwardedPolicy is the set-forwarded-headers policy of routes without
// their own (spec.httpHeaders.forwardedHeaderPolicy).
func forwardedPolicy(s *model.Settings) string {
	if s.ForwardedHeaderPolicy == "" {
		return forwardedAppend
	}
	return s.ForwardedHeaderPolicy
}

// headerActions writes spec.httpHeaders.actions on an HTTP frontend, as
// OpenShift does. There, request actions run before a route's backend
// rules, so a route's own action on the same header wins; response
// actions run after the backend's, so the router's win.
func headerActions(w *cfgWriter, s *model.Settings) {
	for _, a := range s.RequestHeaderActions {
		headerAction(w, "http-request", a)
	}
	for _, a := range s.ResponseHeaderActions {
		headerAction(w, "http-response", a)
	}
}

func headerAction(w *cfgWriter, rule string, a model.HeaderAction) {
	if a.Delete {
		w.line("  ", rule, " del-header ", cfgArg(a.Name))
		return
	}
	// The value is a log-format string: '%' keeps its meaning.
	v, _ := singleQuoted("header action value", a.Value, false) // checked in checkEdgeInput
	w.line("  ", rule, " set-header ", cfgArg(a.Name), " ", v)
}

// compression compresses responses of the listed types with gzip
// (spec.httpCompression), as OpenShift does, for clients that accept it.
func compression(w *cfgWriter, s *model.Settings) {
	if len(s.CompressionMIMETypes) == 0 {
		return
	}
	w.line("  compression algo gzip")
	// One word per type: one with parameters holds a space.
	types := make([]string, len(s.CompressionMIMETypes))
	for i, t := range s.CompressionMIMETypes {
		types[i] = cfgArg(t)
	}
	w.line("  compression type ", strings.Join(types, " "))
}

// errorPageName is the bundle file of the custom error page for code.
func errorPageName(code int) string { return "errorpages/" + strconv.Itoa(code) + ".http" }

// errorPageFiles are the error pages: the custom ones
// (spec.httpErrorCodePages), else the default 503 page.
func errorPageFiles(in Input) []File {
	var out []File
	for _, code := range []int{404, 503} {
		if page := errorPage(in, code); page != nil {
			out = append(out, File{Name: errorPageName(code), Data: page, Mode: 0o644})
		}
	}
	return out
}

// errorPage is the page served for code: the custom one, else for 503
// defaultErrorPage503, else nil (HAProxy's own).
func errorPage(in Input, code int) []byte {
	if page, ok := in.ErrorPages[code]; ok {
		return page
	}
	if code == 503 {
		return defaultErrorPage503
	}
	return nil
}

// defaultErrorPage503 answers a request no route matches, or whose route
// has no server up, when spec.httpErrorCodePages gives no 503 page. As
// OpenShift's default page (its router image's error-page-503.http) it
// says the application is not available and is an HTTP/1.0 response that
// nothing caches and that closes the connection; the words are haroute's.
var defaultErrorPage503 = func() []byte {
	body := "<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\"><title>Application is not available</title></head>\n" +
		"<body>\n<h1>Application is not available</h1>\n" +
		"<p>No application answers at this address right now: no route serves it, or none of the route's endpoints is ready and reachable (for a reencrypt route, one whose certificate fails verification is not).</p>\n" +
		"</body>\n</html>\n"
	return []byte("HTTP/1.0 503 Service Unavailable\r\n" +
		"Pragma: no-cache\r\n" +
		"Cache-Control: private, max-age=0, no-cache, no-store\r\n" +
		"Connection: close\r\n" +
		"Content-Type: text/html\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"\r\n" + body)
}()

// errorFiles serves the error pages in place of HAProxy's own, from every
// frontend and backend (they all start from base).
func errorFiles(w *cfgWriter, in Input) {
	for _, code := range []int{404, 503} {
		if errorPage(in, code) != nil {
			w.line("  errorfile ", strconv.Itoa(code), " ", in.Dir, "/", errorPageName(code))
		}
	}
}

// notFound answers a request no route matched with the custom 404 page,
// as OpenShift does once one is configured; otherwise such a request
// gets a 503 (no backend), as OpenShift's default backend answers.
func notFound(w *cfgWriter, in Input) {
	if _, ok := in.ErrorPages[404]; ok {
		w.line("  http-request deny deny_status 404 if !{ var(txn.be) -m found }")
	}
}
