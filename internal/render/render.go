package render

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/haroute/haroute/internal/model"
)

// Names of the files of a bundle besides ConfigFile and CrtListFile, and
// values shared with the code that drives HAProxy at runtime.
const (
	DefaultCertFile          = "certs/default.pem"
	DefaultDestinationCAFile = "cas/default-destination.pem"
	ClientCAFile             = "cas/client-ca.pem"

	// HTTPMap routes plain HTTP by "host/path/" (map_beg); values are
	// backend names or RedirectValue. HTTPWildcardMap is consulted when it
	// finds nothing, keyed on the parent domain of the request host.
	HTTPMap         = "maps/http.map"
	HTTPWildcardMap = "maps/http_wildcard.map"
	// HTTPHostMap is HTTPMap's hosts that have one entry, their root:
	// keyed by the host alone and matched exactly (map_str), it routes
	// most requests with one tree lookup on the Host header, before the
	// path key is built (see hostMaps).
	HTTPHostMap = "maps/http_host.map"
	// HTTPSMap and HTTPSWildcardMap route requests the fe_sni frontend
	// decrypted (edge and reencrypt routes); HTTPSHostMap is HTTPSMap's
	// as HTTPHostMap is HTTPMap's.
	HTTPSMap         = "maps/https.map"
	HTTPSWildcardMap = "maps/https_wildcard.map"
	HTTPSHostMap     = "maps/https_host.map"
	// SNIPassthroughMap routes TLS by SNI (map_str, exact) to passthrough
	// backends; SNIPassthroughWildcardMap is keyed on the parent domain.
	SNIPassthroughMap         = "maps/sni_passthrough.map"
	SNIPassthroughWildcardMap = "maps/sni_passthrough_wildcard.map"
	// TimeoutServerMap and TimeoutTunnelMap hold, in milliseconds, the
	// timeout and timeout-tunnel annotations of the HTTP routes bound to
	// spare backends, keyed by the spare's name (exact match): a spare
	// reads them at every request, so binding such a route needs no
	// reload (see pool.go).
	TimeoutServerMap = "maps/timeout_server.map"
	TimeoutTunnelMap = "maps/timeout_tunnel.map"
	// HSTSMap holds the Strict-Transport-Security value of the edge and
	// reencrypt routes bound to spares that set hsts_header, keyed the
	// same way.
	HSTSMap = "maps/hsts.map"
	// ForwardedMap holds the set-forwarded-headers policy of the HTTP
	// routes bound to spares that set one, keyed the same way; a spare
	// it does not name follows the router's (forwardedByPolicy).
	ForwardedMap = "maps/forwarded.map"

	// RedirectValue in an HTTP map sends the client to HTTPS instead of a
	// backend (insecureEdgeTerminationPolicy Redirect), so switching a
	// route between None, Allow and Redirect is a map change only.
	RedirectValue = "redirect-https"
	// HTTPSOnlyValue in an HTTP map names no backend, so HAProxy answers
	// 503: the entry of a path route not served over HTTP (insecure
	// policy None) under a shorter path of its host that redirects, which
	// would otherwise answer for it. OpenShift answers 503 there
	// (shadowRedirectsOnly).
	HTTPSOnlyValue = "https-only"

	// AdminSocket and SNISocket are the default names of the admin socket
	// and the TLS hop socket in Input.RunDir (see Sockets).
	AdminSocket = "admin.sock"
	SNISocket   = "fe_sni.sock"

	// SNIBackend is the TCP backend that hands non-passthrough TLS to the
	// fe_sni frontend over SNISocket; SNIServer is its server, and
	// SNIBackupServer the one for Sockets.SNIBackup.
	SNIBackend      = "be_sni"
	SNIServer       = "fe_sni"
	SNIBackupServer = "fe_sni_backup"
)

// routeCertName is the bundle file holding a route's certificate and key.
func routeCertName(r *model.AdmittedRoute) string {
	return "certs/" + fileStem(r.Key.Namespace, r.Key.Name) + ".pem"
}

// routeCAName is the bundle file holding a reencrypt route's destination CA.
func routeCAName(r *model.AdmittedRoute) string {
	return "cas/" + fileStem(r.Key.Namespace, r.Key.Name) + ".pem"
}

// IsRouteCAFile reports whether a bundle file is a route's destination CA
// (routeCAName): only its servers name it.
func IsRouteCAFile(name string) bool {
	return strings.HasPrefix(name, "cas/") && name != DefaultDestinationCAFile && name != ClientCAFile
}

// hasOwnCert reports whether the route's TLS is terminated with its own
// certificate (else the default certificate answers for it).
func hasOwnCert(r *model.AdmittedRoute) bool {
	return (r.Termination == model.TerminationEdge || r.Termination == model.TerminationReencrypt) &&
		r.TLS.Certificate != "" && r.TLS.Key != ""
}

// Render turns the desired state into a complete bundle. It is pure and
// deterministic; it fails only on input that upstream validation should
// have refused, rather than write a config that would break HAProxy. With
// in.Cache set, routes that did not change since an earlier call are not
// rendered again; the bundle is the same either way.
func Render(in Input) (*Bundle, error) {
	if err := checkInput(in); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	var t *cacheTable
	if in.Cache != nil {
		t = in.Cache.table(in)
	}
	outs, sameKeys, mapsSame := routeOutputs(in, t)
	// The same keys as a successful render have distinct file stems. Only
	// routes with files of their own use theirs (at 10k plain routes,
	// checking every stem was a millisecond of each route change).
	var stems map[string]model.RouteKey
	if !sameKeys {
		stems = map[string]model.RouteKey{}
	}
	for i, o := range outs {
		key := in.Desired.Routes[i].Key
		if o.err != nil {
			return nil, fmt.Errorf("render route %s: %w", key, o.err)
		}
		if stems == nil || (o.cert == nil && o.destCA == nil) {
			continue
		}
		if other, dup := stems[o.stem]; dup {
			return nil, fmt.Errorf("render route %s: file name %q already used by route %s", key, o.stem, other)
		}
		stems[o.stem] = key
	}

	b := &Bundle{}
	var mapData [][]byte
	var contested, dependent map[string]bool // nil: t's still hold
	if mapsSame {
		b.Maps, mapData = t.maps, t.mapData
	} else if maps, data, ok := mapsEdited(t, outs, in.Desired.Routes); ok {
		b.Maps, mapData = maps, data
	} else {
		b.Maps, contested, dependent = buildMaps(outs)
		mapData = make([][]byte, len(b.Maps))
		for i, m := range b.Maps {
			mapData[i] = mapFileData(m)
		}
	}
	for i, m := range b.Maps {
		b.Files = append(b.Files, File{Name: m.Name, Data: mapData[i], Mode: 0o644})
	}
	b.Certs, b.Files = buildTLS(in, outs, b.Files)
	b.Files = append(b.Files, errorPageFiles(in)...)
	b.ACLs = slotACLs(in)

	full, skeleton, parts := buildConfig(in, outs, t)
	b.Skeleton = skeleton
	// 0600: the config holds the stats password.
	b.Files = append(b.Files, File{Name: ConfigFile, Parts: full, Mode: 0o600})
	sort.Slice(b.Files, func(i, j int) bool { return b.Files[i].Name < b.Files[j].Name })
	if t != nil {
		t.commit(outs, b.Maps, mapData, skeleton, parts)
		if contested != nil {
			t.contested, t.dependent = contested, dependent
		}
		t.keyOrdered = model.InKeyOrder(in.Desired.Routes)
	}
	return b, nil
}

// CheckDir refuses a directory that haproxy.cfg, its map references or
// the crt-list cannot name as it is: a path that is not absolute and
// clean, or holds, besides what checkWord refuses, ',' (read as an address
// list or the next converter argument), '(' or ')' (ending a converter's
// arguments), '[' or ']' (crt-list filters), or '$', '{' or '}'
// (environment variables). Every generation rendered there would be
// refused by HAProxy.
func CheckDir(what, dir string) error {
	if err := checkWord(what, dir); err != nil {
		return err
	}
	if i := strings.IndexAny(dir, ",()[]${}"); i >= 0 {
		return fmt.Errorf("%s %q contains %q, which haproxy.cfg would not read as part of a path", what, dir, dir[i])
	}
	if !path.IsAbs(dir) || path.Clean(dir) != dir {
		return fmt.Errorf("%s %q must be an absolute, clean path", what, dir)
	}
	return nil
}

func checkInput(in Input) error {
	if in.Desired == nil {
		return errors.New("no desired state")
	}
	for _, d := range []struct{ what, dir string }{{"bundle dir", in.Dir}, {"run dir", in.RunDir}} {
		if err := CheckDir(d.what, d.dir); err != nil {
			return err
		}
	}
	if err := in.Sockets.check(); err != nil {
		return err
	}
	if len(in.DefaultCertificate) == 0 {
		return errors.New("no default certificate")
	}
	if c := in.StatsCredentials; c.Set() {
		// HAProxy splits user from password at the first ':'.
		if strings.Contains(c.User, ":") {
			return errors.New("stats user contains ':'")
		}
		if err := checkQuotable("stats credentials", c.User+":"+c.Password); err != nil {
			return errors.New("stats credentials contain a control character")
		}
	}
	s := in.Desired.Router
	for _, a := range s.ListenAddresses() {
		if a != "" && net.ParseIP(a) == nil {
			return fmt.Errorf("bind address %q is not an IP address", a)
		}
	}
	for _, p := range []struct {
		what string
		port int
	}{{"http port", s.HTTPPort}, {"https port", s.HTTPSPort}, {"stats port", s.StatsPort}} {
		if p.port < 1 || p.port > 65535 {
			return fmt.Errorf("%s %d out of range 1-65535", p.what, p.port)
		}
	}
	return checkEdgeInput(in)
}

var (
	validBalance = map[model.BalanceAlgorithm]bool{"": true, model.BalanceRoundRobin: true,
		model.BalanceLeastConn: true, model.BalanceSource: true, model.BalanceRandom: true}
	validSameSite  = map[string]bool{"": true, "Lax": true, "Strict": true, "None": true}
	validForwarded = map[string]bool{"": true, "append": true, "replace": true, "never": true, "if-none": true}
)

// checkRoute refuses anything that would not render to valid, unambiguous
// HAProxy syntax.
func checkRoute(r *model.AdmittedRoute) error {
	if err := checkWord("host", r.Host); err != nil {
		return err
	}
	if strings.ContainsAny(r.Host, "/:") {
		return fmt.Errorf("host %q must not contain '/' or ':'", r.Host)
	}
	if r.Host != strings.ToLower(r.Host) {
		return fmt.Errorf("host %q is not lowercase", r.Host)
	}
	if r.Path != "" {
		// The path is a map key (no white space there) and, quoted, part
		// of rewrite rules; quotes and '\\' are fine in both.
		if err := checkMapKeyPart("path", r.Path); err != nil {
			return err
		}
		if r.Path[0] != '/' {
			return fmt.Errorf("path %q does not start with '/'", r.Path)
		}
	}
	if err := checkWord("backend name", string(r.BackendName())); err != nil {
		return err
	}
	if err := checkServers(r); err != nil {
		return err
	}
	bs := r.Backend
	if !validBalance[bs.Balance] {
		return fmt.Errorf("unknown balance algorithm %q", bs.Balance)
	}
	if !validSameSite[bs.CookieSameSite] {
		return fmt.Errorf("unknown cookie SameSite value %q", bs.CookieSameSite)
	}
	if !validForwarded[bs.ForwardedHeaders] {
		return fmt.Errorf("unknown set-forwarded-headers value %q", bs.ForwardedHeaders)
	}
	if bs.CookieName != "" {
		if err := checkMapKeyPart("cookie name", bs.CookieName); err != nil {
			return err
		}
		if strings.ContainsAny(bs.CookieName, ";,=") {
			return fmt.Errorf("cookie name %q contains ';', ',' or '='", bs.CookieName)
		}
	}
	for e := range bs.IPAllowlist.Entries() {
		if err := checkAllowEntry(e); err != nil {
			return err
		}
	}
	if bs.HSTSHeader != "" {
		if _, err := singleQuoted("hsts header", bs.HSTSHeader, true); err != nil {
			return err
		}
	}
	if t := bs.RewriteTarget; t != "" {
		if err := checkQuotable("rewrite target", t); err != nil {
			return err
		}
	}
	for _, list := range []model.HeaderActions{bs.RequestHeaders, bs.ResponseHeaders} {
		for a := range list.All() {
			if a.Name == "" {
				return errors.New("header name is empty")
			}
			if err := checkQuotable("header name", a.Name); err != nil {
				return err
			}
			if err := checkQuotable("header value", a.Value); err != nil {
				return err
			}
		}
	}
	if rl := bs.RateLimit; rl.ConcurrentTCP < 0 || rl.RateTCP < 0 || rl.RateHTTP < 0 {
		return errors.New("rate limits must not be negative")
	}
	return nil
}

// checkServers checks every server of the route. Names must be unique in
// the backend: admission keeps an endpoint behind two services once, and
// HAProxy refuses a duplicate server.
func checkServers(r *model.AdmittedRoute) error {
	n := 0
	for i := range r.Services {
		n += len(r.Services[i].Servers)
	}
	// Names seen so far: scanned while few, else in a map.
	var few [smallRoute]model.ServerName
	names := few[:0]
	var seen map[model.ServerName]bool
	if n > smallRoute {
		seen = make(map[model.ServerName]bool, n)
	}
	for i := range r.Services {
		for j := range r.Services[i].Servers {
			s := &r.Services[i].Servers[j]
			if seen != nil && seen[s.Name] || seen == nil && slices.Contains(names, s.Name) {
				return fmt.Errorf("server %s appears twice", s.Name)
			}
			if seen != nil {
				seen[s.Name] = true
			} else {
				names = append(names, s.Name)
			}
			if err := checkServer(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// smallRoute is the number of servers up to which duplicate names are
// found by scanning rather than with a map.
const smallRoute = 16

func checkServer(s *model.Server) error {
	if err := checkWord("server name", string(s.Name)); err != nil {
		return err
	}
	if net.ParseIP(s.Address) == nil {
		return fmt.Errorf("server %s address %q is not an IP address", s.Name, s.Address)
	}
	if s.Port < 1 || s.Port > 65535 {
		return fmt.Errorf("server %s port %d out of range 1-65535", s.Name, s.Port)
	}
	if s.Weight < 0 || s.Weight > 256 {
		return fmt.Errorf("server %s weight %d out of range 0-256", s.Name, s.Weight)
	}
	return nil
}

// checkMapKeyPart rejects white space and control characters, which end
// a key in a map file (and a word in haproxy.cfg); any other byte is
// literal in a map file and can be quoted in haproxy.cfg.
func checkMapKeyPart(what, s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("%s %q contains white space or a control character (%q)", what, s, c)
		}
	}
	return nil
}

// maxMapLine bounds one map line: key, space, value and newline. HAProxy
// 2.6 reads map files a line at a time into a buffer of tune.bufsize
// (16384 bytes) and cuts a longer line in two, the tail becoming an entry
// of its own, which would let one route claim another's host. Validation
// keeps keys within model.MaxMapKeyLength and values are backend names
// (at most about 330 bytes), so a line over this bound is a bug upstream;
// render refuses it rather than write it.
const maxMapLine = model.MaxMapKeyLength + 1024

// checkMapEntries refuses map entries HAProxy would not read back whole.
func checkMapEntries(adds []mapAdd) error {
	for _, e := range adds {
		if len(e.Key) > model.MaxMapKeyLength {
			return fmt.Errorf("%s key of %d bytes is longer than %d", e.name, len(e.Key), model.MaxMapKeyLength)
		}
		if n := len(e.Key) + len(e.Value) + 2; n > maxMapLine {
			return fmt.Errorf("%s line of %d bytes is longer than %d", e.name, n, maxMapLine)
		}
	}
	return nil
}

// mapAdd is one entry a route adds to a map.
type mapAdd struct {
	name string // the map file
	MapEntry
	// weak entries give way to another route's entry for the same key
	// (a "/foo" route's "host/foo/" to a "/foo/" route's).
	weak bool
}

// routeMapEntries returns what route r adds to the maps, in order.
func routeMapEntries(r *model.AdmittedRoute) []mapAdd {
	host, httpMap, httpsMap, sniMap := r.Host, HTTPMap, HTTPSMap, SNIPassthroughMap
	if r.Wildcard {
		if parent, ok := parentDomain(r.Host); ok {
			host, httpMap, httpsMap, sniMap = parent, HTTPWildcardMap, HTTPSWildcardMap, SNIPassthroughWildcardMap
		}
	}
	key, weakKey := routeKeys(host, r.Path)
	be := string(r.BackendName())
	// One allocation per route: at most two maps, two keys each.
	out := make([]mapAdd, 0, 4)
	// add gives the route's entry for its path in map name, and the weak
	// one below the path when it has one.
	add := func(name, value string) {
		out = append(out, mapAdd{name: name, MapEntry: MapEntry{Key: key, Value: value}})
		if weakKey != "" {
			out = append(out, mapAdd{name: name, MapEntry: MapEntry{Key: weakKey, Value: value}, weak: true})
		}
	}
	switch r.Termination {
	case model.TerminationEdge, model.TerminationReencrypt:
		add(httpsMap, be)
		switch r.InsecurePolicy {
		case model.InsecurePolicyAllow:
			add(httpMap, be)
		case model.InsecurePolicyRedirect:
			add(httpMap, RedirectValue)
		default:
			if r.Path != "" && r.Path != "/" {
				add(httpMap, HTTPSOnlyValue)
			}
		}
	case model.TerminationPassthrough:
		// The SNI carries no path: a passthrough route owns the host.
		out = append(out, mapAdd{name: sniMap, MapEntry: MapEntry{Key: host, Value: be}})
		if r.InsecurePolicy == model.InsecurePolicyRedirect {
			out = append(out, mapAdd{name: httpMap, MapEntry: MapEntry{Key: host + "/", Value: RedirectValue}})
		}
	default:
		add(httpMap, be)
	}
	if timeoutsByMap(r) {
		if t := r.Backend.Timeout; t > 0 {
			out = append(out, mapAdd{name: TimeoutServerMap, MapEntry: MapEntry{Key: be, Value: millis(t)}})
		}
		if t := r.Backend.TunnelTimeout; t > 0 {
			out = append(out, mapAdd{name: TimeoutTunnelMap, MapEntry: MapEntry{Key: be, Value: millis(t)}})
		}
	}
	if hstsByMap(r) && r.Backend.HSTSHeader != "" {
		out = append(out, mapAdd{name: HSTSMap, MapEntry: MapEntry{Key: be, Value: r.Backend.HSTSHeader}})
	}
	if forwardedByMap(r) && r.Backend.ForwardedHeaders != "" {
		out = append(out, mapAdd{name: ForwardedMap, MapEntry: MapEntry{Key: be, Value: r.Backend.ForwardedHeaders}})
	}
	return out
}

// hstsByMap reports whether r's backend takes its Strict-Transport-Security
// header from HSTSMap: an edge or reencrypt pool spare, or a route bound to
// one.
func hstsByMap(r *model.AdmittedRoute) bool {
	return onPoolSpare(r) && (r.Termination == model.TerminationEdge || r.Termination == model.TerminationReencrypt)
}

// onPoolSpare reports whether r is a spare the pool made, or a route bound
// to one: its backend reads settings from maps and an ACL the runtime API
// can change (its allowlist; for HTTP its timeouts; for edge and
// reencrypt its HSTS header). A route's own backend kept as a spare keeps
// the text it runs with.
func onPoolSpare(r *model.AdmittedRoute) bool {
	return strings.HasPrefix(string(r.Slot), model.PoolSlotPrefix)
}

// RuntimeSettingsOf returns b with the settings r's backend reads at
// runtime (timeoutsByMap, forwardedByMap, hstsByMap, allowlistByID) taken
// from r: what is left to differ between b and r's settings changes the
// backend's text.
func RuntimeSettingsOf(r *model.AdmittedRoute, b model.BackendSettings) model.BackendSettings {
	if timeoutsByMap(r) {
		b.Timeout, b.TunnelTimeout = r.Backend.Timeout, r.Backend.TunnelTimeout
	}
	if forwardedByMap(r) {
		b.ForwardedHeaders = r.Backend.ForwardedHeaders
	}
	if hstsByMap(r) {
		b.HSTSHeader = r.Backend.HSTSHeader
	}
	if allowlistByID(r) {
		b.IPAllowlist = r.Backend.IPAllowlist
	}
	return b
}

// timeoutsByMap reports whether r's backend takes its timeouts from
// TimeoutServerMap and TimeoutTunnelMap rather than from its own lines:
// an HTTP pool spare or a route bound to one. (A TCP backend has no action
// that sets a timeout per connection on 2.6.)
func timeoutsByMap(r *model.AdmittedRoute) bool {
	return onPoolSpare(r) && r.Termination != model.TerminationPassthrough
}

// forwardedByMap reports whether r's backend takes its
// set-forwarded-headers policy from ForwardedMap (forwardedByPolicy)
// rather than from its own lines: the same backends as timeoutsByMap.
func forwardedByMap(r *model.AdmittedRoute) bool { return timeoutsByMap(r) }

// The allowlist of a pool spare is an inline ACL with an id of its own
// (SlotACLID), so the runtime API can replace its patterns (`prepare acl
// #<id>`, `add acl`, `commit acl`): the addresses of the bound route's
// haproxy.router.openshift.io/ip_allowlist, else allowAll. Its patterns
// are not part of the skeleton, as a route's servers are not. A route
// with more addresses than fit one config line keeps its own backend.

// allowAll are the patterns of a spare's allowlist when its route has
// none.
var allowAll = []string{"0.0.0.0/0", "::/0"}

// slotACLBase puts the spares' ACL ids far above the ones HAProxy numbers
// itself from 0 (one per ACL or map in the config).
const slotACLBase = 1 << 24

// SlotACLID is the runtime API's name of a pool spare's allowlist,
// "#<id>", from the spare's sequence number; "" when slot is not a pool
// spare.
func SlotACLID(slot model.BackendName) string {
	n, ok := slotSeq(slot)
	if !ok {
		return ""
	}
	var buf [16]byte // one allocation a spare at every render: the string
	return string(strconv.AppendInt(append(buf[:0], '#'), int64(slotACLBase+n), 10))
}

// slotSeq is the sequence number that ends a pool spare's name.
func slotSeq(slot model.BackendName) (int, bool) {
	s := string(slot)
	if !strings.HasPrefix(s, model.PoolSlotPrefix) {
		return 0, false
	}
	n, err := strconv.Atoi(s[strings.LastIndexByte(s, ':')+1:])
	return n, err == nil && n >= 0 && n < 1<<30
}

// allowlistByID reports whether r's allowlist is its spare's ACL: a pool
// spare, or a route bound to one whose addresses fit one line.
func allowlistByID(r *model.AdmittedRoute) bool {
	if _, ok := slotSeq(r.Slot); !ok {
		return false
	}
	n := 0
	for range r.Backend.IPAllowlist.Entries() {
		n++
	}
	return n <= allowlistChunk
}

// slotACLs returns the allowlist of every pool spare, in spare order.
func slotACLs(in Input) []ACL {
	var bound map[model.BackendName]*model.AdmittedRoute
	for i := range in.Desired.Routes {
		if r := in.Desired.Routes[i]; onPoolSpare(r) {
			if bound == nil {
				bound = make(map[model.BackendName]*model.AdmittedRoute)
			}
			bound[r.Slot] = r
		}
	}
	acls := make([]ACL, 0, len(in.Spares))
	for i := range in.Spares {
		sp := &in.Spares[i]
		if r := bound[sp.Slot]; r != nil {
			sp = r
		}
		if allowlistByID(sp) {
			acls = append(acls, ACL{ID: SlotACLID(sp.Slot), Patterns: allowPatterns(sp.Backend.IPAllowlist)})
		}
	}
	return acls
}

// allowPatterns are the patterns of an allowlist: allowAll when empty.
func allowPatterns(l model.AddressList) []string {
	if l == "" {
		return allowAll
	}
	var out []string
	for a := range l.Entries() {
		out = append(out, a)
	}
	return out
}

func millis(d time.Duration) string {
	// Rounded up, as duration() writes a backend's own timeout: 500us was
	// 0 here (no timeout set), and 1ms in the route's own backend.
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
}

// buildMaps computes every map, including empty ones: HAProxy needs each
// map file the config names to exist.
func buildMaps(outs []*routeOut) (maps []Map, contested, dependent map[string]bool) {
	names := []string{HTTPMap, HTTPWildcardMap, HTTPHostMap, HTTPSMap, HTTPSWildcardMap, HTTPSHostMap,
		SNIPassthroughMap, SNIPassthroughWildcardMap, TimeoutServerMap, TimeoutTunnelMap, HSTSMap, ForwardedMap}
	sort.Strings(names)
	at := make(map[string]int, len(names))
	for i, name := range names {
		at[name] = i
	}
	// Two passes: count, then fill slices of the exact size. Weak entries
	// go after every route's full ones, so that where they share a key
	// sortEntries keeps the full one.
	counts := make([]int, len(names))
	for _, o := range outs {
		for _, e := range o.maps {
			if i, ok := at[e.name]; ok {
				counts[i]++
			}
		}
	}
	// One borrowed buffer holds them all: sortEntries copies what it
	// keeps.
	total := 0
	for _, n := range counts {
		total += n
	}
	buf := entryScratch.get(total)
	defer entryScratch.put(buf)
	entries := make([][]MapEntry, len(names))
	for i, n := range counts {
		entries[i], buf = buf[:0:n], buf[n:]
	}
	for _, weak := range []bool{false, true} {
		for _, o := range outs {
			for _, e := range o.maps {
				if i, ok := at[e.name]; ok && e.weak == weak {
					entries[i] = append(entries[i], e.MapEntry)
				}
			}
		}
	}
	maps = make([]Map, len(names))
	contested, dependent = map[string]bool{}, map[string]bool{}
	for i, name := range names {
		var dropped []string
		maps[i].Name = name
		maps[i].Entries, dropped = sortEntries(entries[i])
		for _, k := range dropped {
			contested[name+" "+k] = true
		}
		if name == HTTPMap || name == HTTPWildcardMap {
			maps[i].Entries, dependent[name] = shadowRedirectsOnly(maps[i].Entries)
		}
	}
	for _, h := range hostMaps {
		maps[at[h.host]].Entries = hostEntries(maps[at[h.from]].Entries)
	}
	return maps, contested, dependent
}

// shadowRedirectsOnly keeps, of the HTTPSOnlyValue entries of a sorted
// HTTP map, those in front of a redirect: the entries of the same host
// whose keys begin theirs, the longest first (passing over other such
// entries), lead to RedirectValue. OpenShift writes a redirect map entry
// for every route, "no redirect" for a route not served over HTTP, and
// a backend entry only for routes served over HTTP: a None path under a
// root that redirects answers 503 there, and under a root that serves
// HTTP (Allow, plain) that root answers. It reports whether es had any.
func shadowRedirectsOnly(es []MapEntry) ([]MapEntry, bool) {
	if !slices.ContainsFunc(es, func(e MapEntry) bool { return e.Value == HTTPSOnlyValue }) {
		return es, false
	}
	out := make([]MapEntry, 0, len(es))
	for i, e := range es {
		if e.Value != HTTPSOnlyValue || fallback(es, i) == RedirectValue {
			out = append(out, e)
		}
	}
	return out, true
}

// fallback is the value the entry of es[i]'s host with the longest key
// that begins es[i]'s own gives, passing over HTTPSOnlyValue entries:
// what a request for es[i]'s key finds without it. "" when none.
func fallback(es []MapEntry, i int) string {
	host, _ := splitKey(es[i].Key)
	for j := i + 1; j < len(es); j++ {
		if h, _ := splitKey(es[j].Key); h != host {
			break
		}
		if es[j].Value != HTTPSOnlyValue && strings.HasPrefix(es[i].Key, es[j].Key) {
			return es[j].Value
		}
	}
	return ""
}

// ExactMap reports whether HAProxy matches a map's keys exactly (map_str):
// the host and SNI maps, and the maps keyed by backend. The others are
// matched by prefix (map_beg), where the longest key that begins the
// request's wins.
func ExactMap(name string) bool {
	switch name {
	case HTTPHostMap, HTTPSHostMap, SNIPassthroughMap, SNIPassthroughWildcardMap:
		return true
	}
	return BackendMap(name)
}

// BackendMap reports whether a map is keyed by backend names: the
// settings a pool spare reads at runtime (timeouts, HSTS, the
// forwarded-headers policy), rather than the routing of requests to
// backends.
func BackendMap(name string) bool {
	switch name {
	case TimeoutServerMap, TimeoutTunnelMap, HSTSMap, ForwardedMap:
		return true
	}
	return false
}

// hostMaps pairs each host map with the routing map it is derived from.
var hostMaps = []struct{ from, host string }{{HTTPMap, HTTPHostMap}, {HTTPSMap, HTTPSHostMap}}

// hostEntries returns, keyed by the host alone, the entries of a routing
// map (sorted by sortEntries) whose host has no other entry: its root,
// "host/". Such a host goes to that entry whatever the path, so the
// frontend routes it with one exact lookup of the Host header, and builds
// the path key and looks it up by prefix only when that finds nothing
// (callgrind, one route on HAProxy 2.6.12: 3,000 fewer instructions of a
// request's 52,700). A host with paths still takes the prefix lookup,
// which picks its longest path.
//
// A host's entries are sorted longest path first, so its root, the
// shortest key, ends its run: it is alone when the entry before it is of
// another host.
func hostEntries(src []MapEntry) []MapEntry {
	var out []MapEntry
	prev := ""
	for _, e := range src {
		host, path := splitKey(e.Key)
		if path == "/" && host != prev {
			out = append(out, MapEntry{Key: host, Value: e.Value})
		}
		prev = host
	}
	return out
}

// sortEntries orders a map so it reads like the routing decision: by host,
// then longest path first. HAProxy's tree lookups do not depend on file
// order, but a list-matched map would still pick the right entry. The first
// route (in namespace/name order) keeps a duplicated key: admission has
// already rejected real conflicts.
//
// Each entry's host is cut from its key once, and equal keys are ordered
// by their place in es, so that after the sort the first of each run of
// equal keys is the one to keep: no set of the keys seen (10k hashes at
// every route change) is needed.
func sortEntries(es []MapEntry) (kept []MapEntry, dropped []string) {
	keys := keyScratch.get(len(es))
	defer keyScratch.put(keys)
	for i, e := range es {
		h, p := splitKey(e.Key)
		keys[i] = sortKey{host: h, path: p, at: i}
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if c := compareKeys(a.host, a.path, b.host, b.path); c != 0 {
			return c
		}
		return a.at - b.at
	})
	out := make([]MapEntry, 0, len(es))
	for i, k := range keys {
		if i > 0 && k.host == keys[i-1].host && k.path == keys[i-1].path {
			// The same key as the one kept before it.
			dropped = append(dropped, es[k.at].Key)
			continue
		}
		out = append(out, es[k.at])
	}
	return out, dropped
}

// compareKeys is the order of a map's entries: by host, then longest
// path first, then by path.
func compareKeys(host1, path1, host2, path2 string) int {
	if c := strings.Compare(host1, host2); c != 0 {
		return c
	}
	if len(path1) != len(path2) {
		return len(path2) - len(path1)
	}
	return strings.Compare(path1, path2)
}

// sortKey is a map entry's key cut for sorting, and its place.
type sortKey struct {
	host, path string
	at         int
}

func splitKey(k string) (host, path string) {
	if i := strings.IndexByte(k, '/'); i >= 0 {
		return k[:i], k[i:]
	}
	return k, ""
}

func mapFileData(m Map) []byte {
	n := 0
	for _, e := range m.Entries {
		n += len(e.Key) + len(e.Value) + 2
	}
	b := make([]byte, 0, n)
	for _, e := range m.Entries {
		b = append(b, e.Key...)
		b = append(b, ' ')
		b = append(b, e.Value...)
		b = append(b, '\n')
	}
	return b
}

// buildTLS adds the default certificate, route certificates, destination
// CAs and the crt-list to files, and returns the certificate list.
func buildTLS(in Input, outs []*routeOut, files []File) ([]Cert, []File) {
	certs := []Cert{{Name: DefaultCertFile, PEM: in.DefaultCertificate}}
	files = append(files, File{Name: DefaultCertFile, Data: in.DefaultCertificate, Mode: 0o600})
	if len(in.DefaultDestinationCA) > 0 {
		files = append(files, File{Name: DefaultDestinationCAFile, Data: in.DefaultDestinationCA, Mode: 0o644})
	}
	if in.Desired.Router.ClientTLS != nil {
		files = append(files, File{Name: ClientCAFile, Data: in.ClientCA, Mode: 0o644})
	}
	h2 := in.Desired.Router.HTTP2
	var shared map[uint64]int
	n := 0
	for _, o := range outs {
		if o.cert != nil {
			n += len(o.crtPath) + len(alpnH2) + len(o.crtSNI) + 2
			if h2 {
				if shared == nil {
					shared = map[uint64]int{}
				}
				shared[o.certSum]++
			}
		}
	}
	crtList := make([]byte, 0, n)
	for i, o := range outs {
		r := in.Desired.Routes[i]
		if o.destCA != nil {
			files = append(files, File{Name: routeCAName(r), Data: o.destCA, Mode: 0o644})
		}
		if o.cert == nil {
			continue
		}
		name := routeCertName(r)
		certs = append(certs, Cert{Name: name, PEM: o.cert})
		files = append(files, File{Name: name, Data: o.cert, Mode: 0o600})
		crtList = append(crtList, o.crtPath...)
		if h2 && shared[o.certSum] == 1 {
			crtList = append(crtList, alpnH2...)
		}
		crtList = append(crtList, ' ')
		crtList = append(crtList, o.crtSNI...)
		crtList = append(crtList, '\n')
	}
	files = append(files, File{Name: CrtListFile, Data: crtList, Mode: 0o644})
	sort.Slice(certs, func(i, j int) bool { return certs[i].Name < certs[j].Name })
	return certs, files
}

// alpnH2 are the crt-list options that offer HTTP/2 on a route's line.
const alpnH2 = " [alpn h2,http/1.1]"

// routeTLS sets o's destination CA file, its certificate file and what
// its crt-list line is made of; nil and "" when it has none. With HTTP/2
// on, buildTLS offers it as OpenShift's router does: on the line of a
// route with a certificate of its own that no other route has
// (generateHAProxyCertConfigMap's CertificateIndex), so a browser never
// coalesces requests for another host onto its connection.
func routeTLS(o *routeOut, r *model.AdmittedRoute, dir string) {
	if r.Termination == model.TerminationReencrypt && r.TLS.DestinationCACertificate != "" {
		o.destCA = joinPEM(r.TLS.DestinationCACertificate)
	}
	if !hasOwnCert(r) {
		return
	}
	o.cert = joinPEM(r.TLS.Certificate, r.TLS.Key, r.TLS.CACertificate)
	o.crtSNI = r.Host
	if r.Wildcard {
		if parent, ok := parentDomain(r.Host); ok {
			o.crtSNI = "*." + parent
		}
	}
	o.crtPath = dir + "/" + routeCertName(r)
	o.certSum = leafSum(r.TLS.Certificate)
}

// leafSum tells a route's certificate from another's by its first
// block's DER, so that the same certificate written with CRLF, wrapped
// otherwise or after a "Bag Attributes" preamble is the same one.
func leafSum(certPEM string) uint64 {
	data := []byte(certPEM)
	for {
		b, rest := pem.Decode(data)
		if b == nil {
			sum := sha256.Sum256([]byte(strings.TrimSpace(certPEM))) // not PEM: validation refused it already
			return binary.LittleEndian.Uint64(sum[:])
		}
		if b.Type == "CERTIFICATE" {
			sum := sha256.Sum256(b.Bytes)
			return binary.LittleEndian.Uint64(sum[:])
		}
		data = rest
	}
}

// joinPEM concatenates PEM blocks, each ending in a newline.
func joinPEM(parts ...string) []byte {
	n := 0
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		b = append(b, p...)
		b = append(b, '\n')
	}
	return b
}

// bindAddress renders a listen address; "" listens on all IPv4 addresses.
func bindAddress(addr string, port int) string {
	if addr == "" {
		return ":" + strconv.Itoa(port)
	}
	return HostPort(addr, port)
}
