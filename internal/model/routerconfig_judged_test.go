package model

import (
	"reflect"
	"testing"
)

// TestJudgeSettings pins a refusal on the judged settings that HAProxy
// refuses alone, each with its own message, and on the RouterConfig as a
// whole when none does. The check stands in for HAProxy: it refuses the
// values named bad.
func TestJudgeSettings(t *testing.T) {
	check := func(s Settings) (string, error) {
		switch {
		case s.AccessLog != nil && s.AccessLog.Format == "bad":
			return "log", nil
		case s.UniqueID != nil && s.UniqueID.Format == "bad":
			return "unique-id", nil
		case s.TLS.Ciphers == "bad" && s.UniqueID != nil:
			return "ciphers with a unique id", nil // only together
		case s.HTTPPort == 1:
			return "port", nil // not a judged setting
		}
		return "", nil
	}
	base := DefaultSettings()
	with := func(f func(*Settings)) Settings {
		s := base
		f(&s)
		return s
	}
	tests := []struct {
		name string
		s    Settings
		want []SettingsProblem
	}{
		{"two bad values", with(func(s *Settings) {
			s.AccessLog = &AccessLog{Target: "stdout", Format: "bad"}
			s.UniqueID = &UniqueID{Header: "X-Id", Format: "bad"}
		}), []SettingsProblem{{"spec.logging.access.httpLogFormat", refusedBy + "log"}, {"spec.httpHeaders.uniqueId.format", refusedBy + "unique-id"}}},
		{"refused only together", with(func(s *Settings) {
			s.TLS.Ciphers = "bad"
			s.UniqueID = &UniqueID{Header: "X-Id", Format: "ok"}
		}), []SettingsProblem{{"spec", refusedBy + "whole"}}},
		{"not a judged setting", with(func(s *Settings) {
			s.HTTPPort = 1
			s.UniqueID = &UniqueID{Header: "X-Id", Format: "ok"}
		}), []SettingsProblem{{"spec", refusedBy + "whole"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := JudgeSettings(tt.s, "whole", check)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("JudgeSettings = %v, %v, want %v", got, err, tt.want)
			}
		})
	}
}
