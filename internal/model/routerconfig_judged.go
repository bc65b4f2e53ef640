package model

// Some settings only HAProxy can judge: a log format's aliases, fetches
// and converters; a cipher list, against the OpenSSL HAProxy was built
// with; a subject pattern, against its PCRE. Validation checks their
// shape; when HAProxy refuses the configuration, it is asked again
// without each of them (JudgeSettings), and its refusal is reported at
// the field (Loader.RefuseRouterConfig).

// SettingsProblem is a RouterConfig field HAProxy refuses, with why.
// (A RouterConfig HAProxy cannot bind is one too: daemon.unbindable.)
type SettingsProblem struct {
	Field   string
	Message string
}

// judgedSetting is one setting only HAProxy can judge: the RouterConfig
// field that sets it, whether s sets it, and s without it.
type judgedSetting struct {
	field   string
	set     func(s *Settings) bool
	without func(s Settings) Settings
}

// refusedBy starts the message of a value HAProxy refuses.
const refusedBy = "HAProxy refuses the configuration this value makes: "

var judgedSettings = []judgedSetting{
	{
		field: "spec.logging.access.httpLogFormat",
		set:   func(s *Settings) bool { return s.AccessLog != nil && s.AccessLog.Format != "" },
		without: func(s Settings) Settings {
			a := *s.AccessLog
			a.Format = ""
			s.AccessLog = &a
			return s
		},
	},
	{
		field:   "spec.httpHeaders.uniqueId.format",
		set:     func(s *Settings) bool { return s.UniqueID != nil },
		without: func(s Settings) Settings { s.UniqueID = nil; return s },
	},
	{
		field:   "spec.httpHeaders.actions",
		set:     func(s *Settings) bool { return len(s.RequestHeaderActions)+len(s.ResponseHeaderActions) > 0 },
		without: func(s Settings) Settings { s.RequestHeaderActions, s.ResponseHeaderActions = nil, nil; return s },
	},
	{
		field:   "spec.tlsSecurityProfile",
		set:     func(s *Settings) bool { return s.TLS != DefaultSettings().TLS },
		without: func(s Settings) Settings { s.TLS = DefaultSettings().TLS; return s },
	},
	{
		// HAProxy reads a page more strictly than CheckErrorPage can.
		field:   "spec.httpErrorCodePages",
		set:     func(s *Settings) bool { return s.ErrorPagesDir != "" },
		without: func(s Settings) Settings { s.ErrorPagesDir = ""; return s },
	},
	{
		field: "spec.clientTLS.allowedSubjectPatterns",
		set:   func(s *Settings) bool { return s.ClientTLS != nil && s.ClientTLS.SubjectFilter != "" },
		without: func(s Settings) Settings {
			c := *s.ClientTLS
			c.SubjectFilter = ""
			s.ClientTLS = &c
			return s
		},
	},
}

// JudgeSettings pins HAProxy's refusal of s, with message msg, on the
// settings responsible. check reports HAProxy's refusal of a
// configuration made with the given settings and no routes ("" when it
// loads it). Each judged setting is tried alone, the others left out:
// those HAProxy refuses are the problems, each with its own message. When
// the settings fail without any judged one, or only together, the
// RouterConfig as a whole is at fault, at "spec", with msg.
func JudgeSettings(s Settings, msg string, check func(Settings) (string, error)) ([]SettingsProblem, error) {
	var present []judgedSetting
	base := s
	for _, j := range judgedSettings {
		if j.set(&s) {
			present = append(present, j)
			base = j.without(base)
		}
	}
	whole := []SettingsProblem{{Field: "spec", Message: refusedBy + msg}}
	if len(present) == 0 {
		return whole, nil
	}
	if m, err := check(base); err != nil || m != "" {
		return whole, err
	}
	var out []SettingsProblem
	for _, j := range present {
		m, err := check(withOnly(s, present, j))
		if err != nil {
			return nil, err
		}
		if m != "" {
			out = append(out, SettingsProblem{Field: j.field, Message: refusedBy + m})
		}
	}
	if len(out) == 0 {
		return whole, nil
	}
	return out, nil
}

// withOnly is s with every judged setting of present but keep left out.
func withOnly(s Settings, present []judgedSetting, keep judgedSetting) Settings {
	for _, j := range present {
		if j.field != keep.field {
			s = j.without(s)
		}
	}
	return s
}
