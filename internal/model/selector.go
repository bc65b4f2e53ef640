package model

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Label selectors shard routes over several routers sharing one config tree
// (RouterConfig.spec.routeSelector), with Kubernetes' semantics: every
// matchLabels pair and every matchExpressions requirement must hold.

// Matches reports whether labels satisfy the selector. A nil selector, or
// an empty one, matches everything, as in Kubernetes.
func (s *LabelSelector) Matches(labels map[string]string) bool {
	if s == nil {
		return true
	}
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, req := range s.MatchExpressions {
		if !req.matches(labels) {
			return false
		}
	}
	return true
}

func (r LabelSelectorRequirement) matches(labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Operator {
	case "In":
		return ok && slices.Contains(r.Values, v)
	case "NotIn":
		return !ok || !slices.Contains(r.Values, v)
	case "Exists":
		return ok
	case "DoesNotExist":
		return !ok
	default:
		// Unreachable after validation; matching nothing is the safe
		// answer for a router that must not serve what it was not given.
		return false
	}
}

// validateSelector checks a selector written at field (e.g.
// "spec.routeSelector") of src.
func validateSelector(sel *LabelSelector, src Source, field string) Diagnostics {
	if sel == nil {
		return nil
	}
	var ds Diagnostics
	add := func(f, format string, args ...any) {
		ds = append(ds, Diagnostic{Pos: src.At(f), Severity: SeverityError, Field: f, Message: fmt.Sprintf(format, args...)})
	}
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f := field + ".matchLabels." + k
		if msg := labelKeyProblem(k); msg != "" {
			add(f, "%s", msg)
		}
		if msg := labelValueProblem(sel.MatchLabels[k]); msg != "" {
			add(f, "%s", msg)
		}
	}
	for i, req := range sel.MatchExpressions {
		f := fmt.Sprintf("%s.matchExpressions[%d]", field, i)
		if msg := labelKeyProblem(req.Key); msg != "" {
			add(f+".key", "%s", msg)
		}
		switch req.Operator {
		case "In", "NotIn":
			if len(req.Values) == 0 {
				add(f+".values", "operator %s needs at least one value", req.Operator)
			}
			for j, v := range req.Values {
				if msg := labelValueProblem(v); msg != "" {
					add(fmt.Sprintf("%s.values[%d]", f, j), "%s", msg)
				}
			}
		case "Exists", "DoesNotExist":
			if len(req.Values) != 0 {
				add(f+".values", "operator %s takes no values", req.Operator)
			}
		default:
			add(f+".operator", "operator %q is not one of In, NotIn, Exists, DoesNotExist", req.Operator)
		}
	}
	return ds
}

// labelKeyProblem applies Kubernetes' qualified-name rule to a label key:
// an optional DNS-1123 subdomain prefix and "/", then a name of at most 63
// characters of alphanumerics, '-', '_' and '.', alphanumeric at both ends.
func labelKeyProblem(key string) string {
	name := key
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		prefix := key[:i]
		name = key[i+1:]
		if !isDNS1123Subdomain(prefix) {
			return fmt.Sprintf("label key %q: prefix must be a DNS-1123 subdomain", key)
		}
	}
	if name == "" {
		return fmt.Sprintf("label key %q: name is empty", key)
	}
	if !isLabelName(name) {
		return fmt.Sprintf("label key %q: name must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric", key)
	}
	return ""
}

// labelValueProblem applies Kubernetes' label value rule: empty, or a
// label name.
func labelValueProblem(v string) string {
	if v == "" || isLabelName(v) {
		return ""
	}
	return fmt.Sprintf("label value %q must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric", v)
}

func isLabelName(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	if !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
