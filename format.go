package chainplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Format tags of the schedule documents that a checkpointing, offloading or multichain
// planner returns (docs/formats-schedule.md). The writers leave the tag out; a reader
// accepts a document without one, or with one of these.
const (
	ScheduleFormat           = "chainplan.schedule/v1"
	ScheduleFormatOffload    = ScheduleFormat + "+offload"
	ScheduleFormatMultichain = ScheduleFormat + "+multichain"
)

// FormatError reports a document whose format tag this chainplan does not read. Every
// reader of a chainplan.*/vN document checks its tag with CheckFormat, so that a file
// written by a newer chainplan is refused by name instead of being half read.
type FormatError struct {
	Got  string   // the document's tag
	Want []string // the tags the reader takes
	// Of is the reader's own error class (ErrInvalidChain, ErrInvalidPlan, ...), which
	// the error also wraps; nil when the reader has none.
	Of error
}

func (e *FormatError) Error() string {
	msg := fmt.Sprintf("format %s is not supported (this chainplan reads %s)", showTag(e.Got), listTags(e.Want))
	if !e.NewerVersion() {
		msg += "; it is another kind of document"
	}
	return msg
}

// NewerVersion reports whether the document is of a kind the reader knows, in a version
// it does not (chainplan.schedule/v7 for a reader of chainplan.schedule/v1), rather than
// another kind of document altogether.
func (e *FormatError) NewerVersion() bool {
	return slices.ContainsFunc(e.Want, func(w string) bool { return SameKind(e.Got, w) })
}

// Unwrap makes errors.Is(err, ErrSchemaVersion) true for a version of a known kind, and
// errors.Is(err, e.Of) true always.
func (e *FormatError) Unwrap() []error {
	var errs []error
	if e.NewerVersion() {
		errs = append(errs, ErrSchemaVersion)
	}
	if e.Of != nil {
		errs = append(errs, e.Of)
	}
	return errs
}

// CheckFormat is the one check of a document's format tag: nil when got is one of want,
// else a *FormatError that wraps of (the reader's error class, or nil) and, for another
// version of the same kind, ErrSchemaVersion. Whether a document may leave its tag out is
// the reader's rule, not this one's.
func CheckFormat(got string, of error, want ...string) error {
	if slices.Contains(want, got) {
		return nil
	}
	return &FormatError{Got: got, Want: want, Of: of}
}

// SameKind reports whether tag names the kind of document format does, in any version
// ("chainplan.pipeline/v7" and "chainplan.pipeline/v1"): what a caller holding a file of
// unknown kind routes by, so that the reader it picks refuses a version it does not read
// by name.
func SameKind(tag, format string) bool {
	fam := family(tag)
	return fam != "" && fam == family(format)
}

// jsonFormat reads the format tag of a JSON document before a reader looks at anything
// else, so that a document of another version is refused by its tag rather than for a
// field this version does not know. present is false when the document has no tag (or a
// null one); err is encoding/json's when data is no JSON object.
func jsonFormat(data []byte) (tag string, present bool, err error) {
	var head struct {
		Format json.RawMessage `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return "", false, err
	}
	if head.Format == nil || bytes.Equal(head.Format, []byte("null")) {
		return "", false, nil
	}
	if err := json.Unmarshal(head.Format, &tag); err != nil {
		return "", true, fmt.Errorf("%s is not a string", truncate(string(head.Format), 40))
	}
	return tag, true, nil
}

// family is the kind a tag names, without its version: "chainplan.schedule" for
// "chainplan.schedule/v1+offload"; "" for a tag of no chainplan kind.
func family(tag string) string {
	fam, _, ok := strings.Cut(tag, "/v")
	if !ok || !strings.HasPrefix(fam, "chainplan.") {
		return ""
	}
	return fam
}

// listTags writes tags for a message, an extension of a tag listed with it folded in:
// "chainplan.schedule/v1 (+offload, +multichain)", "chainplan.chain/v1 or chainplan.chain/v2".
func listTags(tags []string) string {
	var bases []string
	exts := map[string][]string{}
	for _, t := range tags {
		base, ext, ok := strings.Cut(t, "+")
		if ok && slices.Contains(tags, base) {
			exts[base] = append(exts[base], "+"+ext)
			continue
		}
		bases = append(bases, t)
	}
	for i, b := range bases {
		if len(exts[b]) > 0 {
			bases[i] = fmt.Sprintf("%s (%s)", b, strings.Join(exts[b], ", "))
		}
	}
	if len(bases) < 2 {
		return strings.Join(bases, "")
	}
	return strings.Join(bases[:len(bases)-1], ", ") + " or " + bases[len(bases)-1]
}

var plainTag = regexp.MustCompile(`^[A-Za-z0-9._/+-]+$`)

// showTag writes a tag as it reads in a message: quoted when it is empty, long or holds
// characters no tag has.
func showTag(tag string) string {
	if plainTag.MatchString(tag) && len(tag) <= 64 {
		return tag
	}
	return fmt.Sprintf("%.80q", tag)
}
