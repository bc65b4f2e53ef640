package haproxy

import (
	"fmt"
	"strings"
)

// ReplyError is a runtime command HAProxy refused, with its reply.
type ReplyError struct {
	Command string // first line of the command (payloads left out)
	Reply   string
}

func (e *ReplyError) Error() string {
	return fmt.Sprintf("%s: %s", e.Command, e.Reply)
}

// replyRule says how a command family reports success.
type replyRule struct {
	prefix string
	// ok reports whether a reply (untagged, severity ≥ 4) means success.
	ok func(out string) bool
}

func silent(out string) bool { return out == "" }

func contains(subs ...string) func(string) bool {
	return func(out string) bool {
		for _, s := range subs {
			if strings.Contains(out, s) {
				return true
			}
		}
		return false
	}
}

// replyRules lists the commands haroute sends, longest prefix first where
// prefixes overlap. The replies were recorded on HAProxy 2.6.12 (see
// TestRuntimeReplies, which checks each of them against the real binary):
//
//	add server      ok "[6]: New server registered."
//	                 "[3]: Already exists a server with the same name in backend."
//	                 "[3]: No such backend."  "[3]: unknown keyword 'bogus'."
//	del server      ok "[6]: Server deleted."
//	                 "[3]: Only servers in maintenance mode can be deleted."
//	                 "[3]: Server still has connections attached to it, cannot remove it."
//	                 "[3]: No such server."
//	set server addr ok "[4]: IP changed from '…' to '…'…",
//	                 "[4]: no need to change the addr, port changed from '…' to '…'…"
//	                 "[4]: Invalid addr 'bad' by 'stats socket command'" (a failure at severity 4!)
//	set server weight/state, enable/disable health/server,
//	set dynamic-cookie-key, enable dynamic-cookie: silent on success;
//	                 "[3]: No such server.", "[3]: No such backend.",
//	                 "[3]: Health check was not configured on this server, cannot enable.",
//	                 "[3]: Absolute weight can only be between 0 and 256 inclusive."
//	prepare map     ok "[6]: New version created: 1"
//	prepare acl     ok "New version created: 1"
//	add/commit/clear map, add/commit acl: silent on success;
//	                 "'<pattern>' is not a valid IPv4 or IPv6 address." (add acl)
//	                 "[3]: Unknown map identifier. Please use #<id> or <file>."
//	                 "[3]: Version number in the future, please use 'prepare map' before."
//	set ssl cert    ok "[5]: Transaction created for certificate <path>!" (or "updated")
//	                 "[3]: Can't replace a certificate which is not referenced by the configuration!…"
//	commit ssl cert ok "Committing <path>.\nSuccess!" (untagged)
//	                 "[3]: No ongoing transaction! !\nCan't commit <path>!"
//	abort ssl cert  ok "[5]: Transaction aborted for certificate '<path>'!"
//	new ssl cert    ok "New empty certificate store '<path>'!" (untagged, as are the rest)
//	                 "Certificate '<path>' already exists!"
//	del ssl cert    ok "Certificate '<path>' deleted!"
//	                 "Can't remove the certificate: certificate '<path>' doesn't exist!"
//	add ssl crt-list ok "Inserting certificate '<path>' in crt-list '<list>'.\nSuccess!"
//	new ssl ca-file ok "New CA file created '<path>'!"; "CA file '<path>' already exists!"
//	set ssl ca-file ok "transaction created for CA <path>!"
//	commit ssl ca-file ok "Committing <path>\nSuccess!"
//	del ssl ca-file ok "CA file '<path>' deleted!" (also while servers name it)
//	                 "Can't remove the CA file: CA file '<path>' doesn't exist!"
//	del ssl crt-list ok "Entry '<path>' deleted in crtlist '<list>'!"
//	                 "Can't delete the entry: found the certificate '<path>' in several entries, …"
var replyRules = []replyRule{
	{"add server ", contains("New server registered.")},
	{"del server ", contains("Server deleted.")},
	{"set server ", nil}, // decided by setServerOK
	{"enable health ", silent},
	{"disable health ", silent},
	{"enable agent ", silent},
	{"disable agent ", silent},
	{"enable server ", silent},
	{"disable server ", silent},
	{"set dynamic-cookie-key ", silent},
	{"enable dynamic-cookie ", silent},
	{"disable dynamic-cookie ", silent},
	{"prepare map ", contains("New version created: ")},
	{"add map ", silent},
	{"set map ", silent},
	{"del map ", silent},
	{"commit map ", silent},
	{"clear map ", silent},
	{"prepare acl ", contains("New version created: ")},
	{"add acl ", silent},
	{"commit acl ", silent},
	{"set ssl cert ", contains("Transaction created for certificate", "Transaction updated for certificate")},
	{"commit ssl cert ", contains("Success!")},
	{"abort ssl cert ", contains("Transaction aborted for certificate")},
	{"new ssl cert ", contains("New empty certificate store")},
	{"del ssl cert ", contains("' deleted!")},
	{"add ssl crt-list ", contains("Success!")},
	{"new ssl ca-file ", contains("New CA file created")},
	{"set ssl ca-file ", contains("transaction created for CA")},
	{"commit ssl ca-file ", contains("Success!")},
	{"del ssl ca-file ", contains("' deleted!")},
	{"del ssl crt-list ", contains("' deleted in crtlist '")},
}

// setServerOK: `set server … addr` is the one setter that talks when it
// succeeds, and it reports both success and an invalid address at
// severity 4, so the text decides.
func setServerOK(cmd, out string) bool {
	if strings.Contains(" "+cmd+" ", " addr ") {
		return strings.Contains(out, "changed from") || strings.HasPrefix(out, "no need to change")
	}
	return out == ""
}

// Err returns nil when HAProxy accepted the command and a *ReplyError
// otherwise. Severity 0–3 (emerg … err) is always a failure. For the
// commands haroute uses, the reply must also match the known success reply
// (or be empty for silent ones), because HAProxy reports some failures as
// plain text or at warning level. Other commands (show …) fail only on an
// error-level tag.
func (r Response) Err() error {
	if r.Severity >= 0 && r.Severity <= 3 {
		return r.replyError()
	}
	cmd := strings.Join(strings.Fields(firstLine(r.Command)), " ") + " "
	for _, rule := range replyRules {
		if !strings.HasPrefix(cmd, rule.prefix) {
			continue
		}
		ok := rule.ok
		if ok == nil {
			ok = func(out string) bool { return setServerOK(cmd, out) }
		}
		if ok(r.Output) {
			return nil
		}
		return r.replyError()
	}
	return nil
}

func (r Response) replyError() error {
	reply := r.Output
	if reply == "" {
		reply = "(empty reply)"
	}
	return &ReplyError{Command: firstLine(r.Command), Reply: reply}
}

// FirstError returns the first refused command's error, or nil.
func FirstError(resps []Response) error {
	for _, r := range resps {
		if err := r.Err(); err != nil {
			return err
		}
	}
	return nil
}
