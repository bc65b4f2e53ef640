package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/snapshot"
	"github.com/haroute/haroute/internal/status"
)

// reportInput publishes the problems of an evaluated generation: each new
// diagnostic in the log, the counts by severity as a gauge and in status
// (so an alert fires while the tree has errors), and the objects serving
// their last good version.
func (d *Daemon) reportInput(res model.Result) {
	d.logDiagnostics(res.Diagnostics)
	var errs, warns, notes int
	for _, diag := range res.Diagnostics {
		switch diag.Severity {
		case model.SeverityError:
			errs++
		case model.SeverityWarning:
			warns++
		default:
			notes++
		}
	}
	stale := res.StaleCount()
	// Files that could not be read are errors too (recorded one by one
	// in sync): an unreadable file serving its last good content showed
	// "0 errors", and no alert fired. The summary counts them too, as
	// status does, but names the first of the others.
	summary := ""
	if errs > 0 {
		summary = fmt.Sprintf("%d problem(s) in %s; first: %s", errs+d.readErrors, d.opts.ConfigDir, firstError(res.Diagnostics))
	}
	errs += d.readErrors
	warns += d.readWarnings
	d.inputCounts = inputCounts{errors: errs, warnings: warns, notes: notes, stale: stale}
	d.metrics.SetInputProblems(errs, warns, notes)
	d.metrics.SetStale(stale)
	var others []string
	if stale > 0 {
		others = res.StaleOthers()
	}
	list := slices.Clone(d.readErrorList)
	for _, diag := range res.Diagnostics {
		if diag.Severity == model.SeverityError && len(list) < status.MaxListedErrors {
			list = append(list, diag.String())
		}
	}
	d.status.Set(func(s *status.Status) {
		s.InputProblems = status.InputProblems{Errors: errs, Warnings: warns, Notes: notes, ErrorList: list}
		s.StaleObjects = others
	})
	// An earlier summary is over once the problem it named first is (one
	// fixed while another file broke stayed "standing" until every
	// problem was), or once the summary just made names it first: it
	// goes on there, where only the count differs. Resolving every other
	// summary said "resolved" of a problem still there as soon as a
	// second one came; keeping each count's summary filled the history.
	current := map[string]bool{}
	for _, diag := range res.Diagnostics {
		if diag.Severity == model.SeverityError {
			current[diag.String()] = true
		}
	}
	marker := " problem(s) in " + d.opts.ConfigDir + "; first: "
	_, newFirst, _ := strings.Cut(summary, marker)
	resolved := d.status.ResolveErrors(time.Now(), func(msg string) bool {
		_, first, ok := strings.Cut(msg, marker)
		return ok && msg != summary && (!current[first] || first == newFirst)
	})
	for _, msg := range resolved {
		// A summary the next one names first goes on there: only a
		// problem that is gone is resolved in the log.
		if _, first, _ := strings.Cut(msg, marker); !current[first] {
			d.log.Info("resolved", "was", first)
		}
	}
	// Recorded after the summaries it replaces are resolved: a reader of
	// status that saw it as the last error still found the one it
	// replaces standing beside it (a test did, now and then).
	if summary != "" {
		d.recordError(errors.New(summary))
	}
}

// inputCounts are the counts reportInput last published, which a broken
// certificate file found later in the same change adds to.
type inputCounts struct{ errors, warnings, notes, stale int }

// clearErrorIfClean clears the last error once an accepted generation has
// no errors: "last error" describes the present, the history the past.
//
// A failing reload, heal or write of the live files is not the input's:
// it stands until it succeeds (loaded clears it then). Accepting a clean
// generation said "resolved" of a reload that kept failing.
func (d *Daemon) clearErrorIfClean(res model.Result) {
	d.inputClean = !res.Diagnostics.HasErrors(false) && d.materialErr == nil && (d.desiredFrom == nil || len(d.desiredFrom.Errors) == 0)
	if d.inputClean && !d.behindReload && d.healing.backoff == 0 && d.writeRetryAt.IsZero() {
		d.clearError()
	}
}

// setGuardStatus shows a generation held by the deletion guard, or none
// when since is zero.
func (d *Daemon) setGuardStatus(since time.Time, dropped, total int, reason string) {
	d.status.Set(func(s *status.Status) {
		if since.IsZero() {
			s.DeletionGuard = nil
			return
		}
		s.DeletionGuard = &status.Guard{Since: since, Dropped: dropped, Of: total, Reason: reason}
	})
}

// Why the deletion guard holds a drop, for status.
const (
	guardQuiet    = "the same routes must stay dropped for the quiet period before they are"
	guardForFiles = "the quiet period is over, but files that may be cut off mid-write are held (held files), and what the drop lacks may be in them"
)

// serveRestored starts serving the saved last good state when the config
// dir cannot be read at start, or when the deletion guard holds what it
// reads; why says which, in the log.
func (d *Daemon) serveRestored(ctx context.Context, why string) error {
	sv := d.restored
	d.log.Warn(why+"; serving the saved last good state", "files", len(sv.files))
	var h strings.Builder
	for _, f := range sv.files {
		h.WriteString(f.Path + "\x00" + f.Hash + "\x00")
	}
	snap := &snapshot.Snapshot{Root: "saved last good state", Files: sv.files, Hash: "saved:" + contentHash([]byte(h.String()))}
	res := d.loader.Evaluate(sv.files)
	d.reportInput(res)
	if res.RouterUnsettled {
		// The saved RouterConfig does not load either (restore): never
		// guess the ports.
		d.recordError(errors.New("the saved RouterConfig cannot be used: not starting HAProxy until the config dir holds a good one"))
		d.setNotReady("RouterConfig invalid")
		return nil
	}
	gen, err := d.generationOf(res, snap, sv.files)
	if err != nil {
		d.recordError(err)
		return nil
	}
	gen.saved = true
	_, err = d.advance(ctx, gen)
	return err
}
