package plan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// maxSummaryReasons bounds the reasons the summary line spells out; every
// reason still has its own change line above it.
const maxSummaryReasons = 5

// Format writes the plan for a person: one line per change (how it is
// applied, what kind, which subject, details), then a summary line.
// Write errors are the writer's to report (a terminal or a buffer).
func (p Plan) Format(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range p.Changes {
		line := c.Mode.String() + "\t" + string(c.Kind) + "\t" + c.Subject
		if c.Detail != "" {
			line += "\t" + c.Detail
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintln(w, p.Summary())
}

// Summary is the plan in one line, e.g.
// "plan: reload (1 reason: route added: default/new)".
func (p Plan) Summary() string {
	switch {
	case p.Reload:
		shown := make([]string, 0, min(len(p.Reasons), maxSummaryReasons+1))
		for i, r := range p.Reasons {
			if i == maxSummaryReasons {
				shown = append(shown, fmt.Sprintf("and %d more", len(p.Reasons)-maxSummaryReasons))
				break
			}
			shown = append(shown, r.String())
		}
		return fmt.Sprintf("plan: reload (%s: %s)", count(len(p.Reasons), "reason"), strings.Join(shown, "; "))
	case len(p.Ops) > 0:
		return fmt.Sprintf("plan: runtime (%s, no reload)", count(len(p.Ops), "operation"))
	case len(p.Changes) > 0:
		return "plan: no HAProxy changes"
	default:
		return "plan: no changes"
	}
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
