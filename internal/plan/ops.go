package plan

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// Op is one runtime operation. Every op but MapReplace and ACLReplace is
// a CommandOp: a fixed list of runtime API commands. Those two are
// VersionedOps: they need the version HAProxy returns from `prepare map`
// or `prepare acl`, so the daemon drives them in two steps.
//
// Commands use HAProxy 2.6 syntax that stays valid on 2.8 and 3.x. Each
// command string is sent as one request followed by a newline.
type Op interface {
	// String is a short description for logs.
	String() string
	isOp()
}

// CommandOp is an Op whose commands are known when the plan is made.
type CommandOp interface {
	Op
	Commands() []string
}

// AddServer adds a server for a new endpoint of an existing backend.
type AddServer struct {
	Backend model.BackendName
	Server  model.ServerName
	Addr    string
	Port    int
	// Args is the option string after addr:port, identical to the one the
	// rendered config carries for the same server (render.ServerArgs).
	Args string
	// Checked is true when the route has two or more active endpoints
	// after the change, so the new server is health checked.
	Checked bool
}

// Commands adds the server, sets its health checking explicitly and takes it
// out of maintenance. Dynamic servers start in maintenance with health
// checks disabled; `enable server` is used instead of the `enabled` keyword,
// which 3.0 removed.
func (o AddServer) Commands() []string {
	line := fmt.Sprintf("add server %s %s", serverRef(o.Backend, o.Server), render.HostPort(o.Addr, o.Port))
	if o.Args != "" {
		line += " " + o.Args
	}
	cmds := append([]string{line}, healthCommands(o.Backend, o.Server, o.Checked)...)
	return append(cmds, "enable server "+serverRef(o.Backend, o.Server))
}

func (o AddServer) String() string {
	return fmt.Sprintf("add server %s %s", serverRef(o.Backend, o.Server), render.HostPort(o.Addr, o.Port))
}

// SetDynamicCookieKey re-sends a backend's dynamic cookie key. On 2.6 a
// server added at runtime gets its cookie value only after the key is sent
// again (DESIGN §4); the value then equals the one the config gives it.
type SetDynamicCookieKey struct {
	Backend model.BackendName
	Key     string
}

func (o SetDynamicCookieKey) Commands() []string {
	return []string{
		fmt.Sprintf("set dynamic-cookie-key backend %s %s", o.Backend, cliEscape(o.Key)),
		fmt.Sprintf("enable dynamic-cookie backend %s", o.Backend),
	}
}

func (o SetDynamicCookieKey) String() string {
	return fmt.Sprintf("set dynamic-cookie-key backend %s", o.Backend)
}

// RemoveServer drains a server whose endpoint went away. It is only put in
// maintenance: established (possibly long-lived) connections keep running,
// and the daemon deletes it with DeleteServerCommand once it has none.
type RemoveServer struct {
	Backend model.BackendName
	Server  model.ServerName
	// Options are the server's arguments but its weight (serverOptions):
	// what it keeps while it drains, should its endpoint come back.
	Options string
}

func (o RemoveServer) Commands() []string {
	return []string{fmt.Sprintf("set server %s state maint", serverRef(o.Backend, o.Server))}
}

func (o RemoveServer) String() string {
	return "drain server " + serverRef(o.Backend, o.Server)
}

// DeleteServerCommand is the command that finally deletes a drained server.
// HAProxy refuses it while the server still has connections; the daemon
// retries in the background.
func DeleteServerCommand(backend model.BackendName, server model.ServerName) string {
	return "del server " + serverRef(backend, server)
}

// ReenableServer brings back a server that was drained but not yet deleted:
// it still exists in HAProxy, so adding it again would fail. Its weight and
// health checking are set explicitly because they may have changed since it
// was drained.
type ReenableServer struct {
	Backend model.BackendName
	Server  model.ServerName
	Weight  int
	Checked bool
}

func (o ReenableServer) Commands() []string {
	ref := serverRef(o.Backend, o.Server)
	cmds := append([]string{fmt.Sprintf("set server %s weight %d", ref, o.Weight)}, healthCommands(o.Backend, o.Server, o.Checked)...)
	return append(cmds, fmt.Sprintf("set server %s state ready", ref))
}

func (o ReenableServer) String() string {
	return "re-enable server " + serverRef(o.Backend, o.Server)
}

// SetWeight changes a server's weight (service weights, A/B splits).
type SetWeight struct {
	Backend model.BackendName
	Server  model.ServerName
	Weight  int
}

func (o SetWeight) Commands() []string {
	return []string{fmt.Sprintf("set server %s weight %d", serverRef(o.Backend, o.Server), o.Weight)}
}

func (o SetWeight) String() string {
	return fmt.Sprintf("set weight %s %d", serverRef(o.Backend, o.Server), o.Weight)
}

// VersionedOp replaces the content of a loaded map or ACL file
// atomically: PrepareCommand opens a new version, Commands(ver) fills and
// commits it.
type VersionedOp interface {
	Op
	PrepareCommand() string
	Commands(ver string) []string
}

// QueryOp needs HAProxy's answer to a query for its last commands: it
// sends Before, then Query, then what After makes of the reply.
type QueryOp interface {
	Op
	Before() []string
	Query() string
	After(reply string) ([]string, error)
}

// Queried returns op as a QueryOp when its last commands need HAProxy's
// answer: a QueryOp itself, or a VersionedOp, whose commands need the
// version `prepare map` returns. Runtime clients send every such op the
// same way.
func Queried(op Op) (QueryOp, bool) {
	switch o := op.(type) {
	case QueryOp:
		return o, true
	case VersionedOp:
		return versioned{o}, true
	}
	return nil, false
}

// versioned is a VersionedOp as a QueryOp.
type versioned struct{ VersionedOp }

func (versioned) Before() []string { return nil }

func (v versioned) Query() string { return v.PrepareCommand() }

func (v versioned) After(reply string) ([]string, error) {
	ver, err := ParsePrepareReply(reply)
	if err != nil {
		return nil, err
	}
	return v.Commands(ver), nil
}

// MaxPayload bounds the bytes of one payload command (`add map … <<`,
// `set ssl cert … <<`). HAProxy reads a payload into one buffer
// (tune.bufsize, 16 KiB by default) and 2.6.12 drops the connection when
// it does not fit; the margin leaves room for the command line.
const MaxPayload = 12 << 10

// MapEdit deletes and adds single entries of a loaded map in place: for a
// change of a few entries (a route added or deleted) at 10k routes, far
// less than sending the whole map again. Added entries land at the end of
// the live map, so the planner uses it only where that cannot change
// which entry a lookup finds (see safeEdit); the read-back checks it.
type MapEdit struct {
	Path string
	Set  []render.MapEntry // existing keys, new values: changed in place
	Add  []render.MapEntry
	Del  []string // keys
}

// Commands changes values first (in place, atomically per entry), then
// adds, then deletes: a key is never missing while it is still wanted.
func (o MapEdit) Commands() []string {
	out := make([]string, 0, len(o.Set)+len(o.Add)+len(o.Del))
	for _, e := range o.Set {
		out = append(out, "set map "+o.Path+" "+e.Key+" "+e.Value)
	}
	for _, e := range o.Add {
		out = append(out, "add map "+o.Path+" "+e.Key+" "+e.Value)
	}
	for _, k := range o.Del {
		out = append(out, "del map "+o.Path+" "+k)
	}
	return out
}

func (o MapEdit) String() string {
	return fmt.Sprintf("edit map %s: %d changed, +%d -%d entries", o.Path, len(o.Set), len(o.Add), len(o.Del))
}

// MapReplace replaces the whole content of a loaded map file atomically:
// `prepare map` opens a new version, the entries are added to it in file
// order (order decides which prefix matches first), and `commit map` swaps
// it in.
type MapReplace struct {
	// Path is the absolute path the config loads the map from, which is
	// how the runtime API names it.
	Path    string
	Entries []render.MapEntry
}

// PrepareCommand opens a new, empty version of the map.
func (o MapReplace) PrepareCommand() string { return "prepare map " + o.Path }

// ParsePrepareReply extracts the version from the reply to PrepareCommand,
// "New version created: <ver>".
func ParsePrepareReply(reply string) (string, error) {
	const prefix = "New version created:"
	reply = strings.TrimSpace(reply)
	rest, ok := strings.CutPrefix(reply, prefix)
	if !ok {
		return "", fmt.Errorf("parse prepare reply %q: missing %q", reply, prefix)
	}
	ver := strings.TrimSpace(rest)
	if _, err := strconv.ParseUint(ver, 10, 64); err != nil {
		return "", fmt.Errorf("parse prepare reply %q: bad version: %w", reply, err)
	}
	return ver, nil
}

// Commands fills version ver with the entries and commits it. Entries go
// as payloads of "key value" lines, as few as MaxPayload allows: HAProxy
// 2.6.12 takes the payload form of `add map`, and a 10k-entry map loads in
// ~36 ms instead of ~300 ms with one command per entry. In a payload
// nothing is escaped (quotes and '\' in a path arrive literally, verified
// on 2.6.12); render's keys and values hold no white space or control
// characters, and fit in a line (checkMapEntries).
func (o MapReplace) Commands(ver string) []string {
	head := "add map @" + ver + " " + o.Path + " <<\n"
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, head+b.String())
			b.Reset()
		}
	}
	for _, e := range o.Entries {
		line := e.Key + " " + e.Value + "\n"
		if b.Len()+len(line) > MaxPayload {
			flush()
		}
		b.WriteString(line)
	}
	flush()
	return append(out, "commit map @"+ver+" "+o.Path)
}

// ACLReplace replaces the patterns of a loaded ACL: a spare's allowlist,
// named "#<id>" (render.SlotACLID). One command a pattern: `add acl` takes
// no payload on 2.6, and such allowlists are short.
type ACLReplace struct {
	Path     string // "#<id>" or a file
	Patterns []string
}

// PrepareCommand opens a new, empty version of the ACL.
func (o ACLReplace) PrepareCommand() string { return "prepare acl " + o.Path }

// Commands fills version ver with the patterns and commits it.
func (o ACLReplace) Commands(ver string) []string {
	out := make([]string, 0, len(o.Patterns)+1)
	for _, p := range o.Patterns {
		out = append(out, "add acl @"+ver+" "+o.Path+" "+p)
	}
	return append(out, "commit acl @"+ver+" "+o.Path)
}

func (o ACLReplace) String() string {
	return fmt.Sprintf("replace acl %s (%d patterns)", o.Path, len(o.Patterns))
}

func (o MapReplace) String() string {
	return fmt.Sprintf("replace map %s (%d entries)", o.Path, len(o.Entries))
}

// SetCert replaces the PEM (chain + key) of a certificate file the running
// config already loaded, then commits the transaction. Compute plans it
// only for a PEM whose payload fits MaxPayload; a larger one reloads.
type SetCert struct {
	Path string
	PEM  []byte
}

// Commands sends the PEM as a payload (see certPayload).
func (o SetCert) Commands() []string {
	return []string{"set ssl cert " + o.Path + " <<\n" + certPayload(o.PEM), "commit ssl cert " + o.Path}
}

// certPayload is pem as a runtime payload: the payload ends at the first
// empty line, so blank lines (legal between PEM blocks, ignored by PEM
// parsers) are dropped, and so are carriage returns. The command ends with
// one newline that, with the newline the client appends, closes it.
func certPayload(pem []byte) string {
	var b strings.Builder
	for line := range bytes.Lines(pem) {
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func (o SetCert) String() string { return "set ssl cert " + o.Path }

// RehostCert moves a certificate's crt-list line to another host together
// with new content (a route moved to another host, with the certificate
// for it). No line may name content that is not its own, so the old line
// goes before the content is committed and the new line comes after; the
// content is staged first, so that a payload HAProxy refuses changes
// nothing. Between the delete and the add, the old host has no line (the
// default certificate), as it would once the change is done.
type RehostCert struct {
	List string
	Cert string
	PEM  []byte
	Line string // the new line
}

func (o RehostCert) Commands() []string {
	return []string{
		"set ssl cert " + o.Cert + " <<\n" + certPayload(o.PEM),
		"del ssl crt-list " + o.List + " " + o.Cert,
		"commit ssl cert " + o.Cert,
		"add ssl crt-list " + o.List + " <<\n" + o.Line + "\n",
	}
}

func (o RehostCert) String() string { return "move ssl cert " + o.Cert + " to crt-list line " + o.Line }

// AddCert loads a certificate file the running HAProxy does not hold yet
// (a new route's own certificate): an empty store entry, its PEM, commit.
// A crt-list line (AddCrtListLine) then serves it.
type AddCert struct {
	Path string
	PEM  []byte
}

func (o AddCert) Commands() []string {
	return append([]string{"new ssl cert " + o.Path}, SetCert(o).Commands()...)
}

func (o AddCert) String() string { return "new ssl cert " + o.Path }

// DeleteCert unloads a certificate file no crt-list line uses any more.
type DeleteCert struct{ Path string }

func (o DeleteCert) Commands() []string { return []string{"del ssl cert " + o.Path} }
func (o DeleteCert) String() string     { return "del ssl cert " + o.Path }

// AddCrtListLine appends a line to a crt-list every TLS bind shares: the
// certificate, its options ("[alpn h2,http/1.1]") and SNI filter, exactly
// as the file says it. Compute plans it only for a line whose SNI no other
// line has, so the order of lines (runtime appends; the file is in route
// order) never decides which certificate a name gets.
type AddCrtListLine struct {
	List string
	Line string
}

func (o AddCrtListLine) Commands() []string {
	return []string{"add ssl crt-list " + o.List + " <<\n" + o.Line + "\n"}
}

func (o AddCrtListLine) String() string { return "add ssl crt-list " + o.Line }

// DeleteCrtListLine removes the line of a certificate from a crt-list;
// every certificate of a route is its own file, on one line.
type DeleteCrtListLine struct {
	List string
	Cert string
}

func (o DeleteCrtListLine) Commands() []string {
	return []string{"del ssl crt-list " + o.List + " " + o.Cert}
}

func (o DeleteCrtListLine) String() string { return "del ssl crt-list " + o.Cert }

// ReplaceCrtListLine moves a certificate's crt-list line to new text
// (another host, other options), adding the new line before deleting the
// old one: deleted first, the host was served the default certificate in
// between. Both lines then name the same file, so the old one is deleted
// by its number, from `show ssl crt-list -n`: HAProxy numbers a line
// added at runtime after every other, so the new line has the highest.
type ReplaceCrtListLine struct {
	List string
	Cert string
	Line string // the new line
}

func (o ReplaceCrtListLine) Before() []string {
	return AddCrtListLine{List: o.List, Line: o.Line}.Commands()
}

func (o ReplaceCrtListLine) Query() string { return "show ssl crt-list -n " + o.List }

// After deletes the line of Cert with the lowest number: the old one.
// Entries read "<cert>:<number>[ [options]][ filters]".
func (o ReplaceCrtListLine) After(reply string) ([]string, error) {
	var nums []int
	for line := range strings.Lines(reply) {
		rest, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), o.Cert+":")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, " ")
		if n, err := strconv.Atoi(num); err == nil {
			nums = append(nums, n)
		}
	}
	if len(nums) != 2 {
		return nil, fmt.Errorf("show ssl crt-list -n %s: %s is on %d lines once its new one is added, want 2", o.List, o.Cert, len(nums))
	}
	return []string{fmt.Sprintf("del ssl crt-list %s %s:%d", o.List, o.Cert, min(nums[0], nums[1]))}, nil
}

func (o ReplaceCrtListLine) String() string { return "replace ssl crt-list line " + o.Line }

// AddCAFile loads a CA file the running HAProxy does not hold yet (a new
// reencrypt route's destinationCACertificate), before the servers that
// name it in `ca-file` are added.
type AddCAFile struct {
	Path string
	PEM  []byte
}

func (o AddCAFile) Commands() []string {
	return []string{"new ssl ca-file " + o.Path, "set ssl ca-file " + o.Path + " <<\n" + certPayload(o.PEM), "commit ssl ca-file " + o.Path}
}

func (o AddCAFile) String() string { return "new ssl ca-file " + o.Path }

// DeleteCAFile unloads the CA file of a route that went away. HAProxy
// (2.6 to 3.0) lets it go while servers still name it: they keep the
// store they were made with, and only drain.
type DeleteCAFile struct{ Path string }

func (o DeleteCAFile) Commands() []string { return []string{"del ssl ca-file " + o.Path} }
func (o DeleteCAFile) String() string     { return "del ssl ca-file " + o.Path }

func (AddServer) isOp()           {}
func (AddCAFile) isOp()           {}
func (DeleteCAFile) isOp()        {}
func (AddCert) isOp()             {}
func (DeleteCert) isOp()          {}
func (AddCrtListLine) isOp()      {}
func (DeleteCrtListLine) isOp()   {}
func (ReplaceCrtListLine) isOp()  {}
func (SetDynamicCookieKey) isOp() {}
func (RemoveServer) isOp()        {}
func (ReenableServer) isOp()      {}
func (SetWeight) isOp()           {}
func (MapReplace) isOp()          {}
func (ACLReplace) isOp()          {}
func (MapEdit) isOp()             {}
func (SetCert) isOp()             {}
func (RehostCert) isOp()          {}

func serverRef(be model.BackendName, srv model.ServerName) string {
	return string(be) + "/" + string(srv)
}

// healthCommands starts the checks of a server rendered with `check`
// (render.ServerArgs): dynamic servers start with checks disabled. An
// unchecked server has no check to start or stop; out of maintenance it is
// UP, as a route cannot do without it (as in OpenShift).
func healthCommands(be model.BackendName, srv model.ServerName, checked bool) []string {
	if checked {
		return []string{"enable health " + serverRef(be, srv)}
	}
	return nil
}

// cliEscape protects the characters the runtime API's argument parser
// treats specially: spaces split arguments, ';' splits commands and '\'
// escapes.
func cliEscape(s string) string {
	if !strings.ContainsAny(s, " \t;\\") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case ' ', '\t', ';', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
