package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/profile"
)

var (
	//go:embed page.html
	pageHTML string
	//go:embed style.css
	styleCSS string
)

// page is the template of the report; its helpers format times and sizes.
var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"bytes": chainplan.FormatBytes,
	"nbytes": func(n profile.NullInt64) string {
		if !n.Valid {
			return "—"
		}
		return chainplan.FormatBytes(n.Int64)
	},
	"ms": func(s float64) string { return fmt.Sprintf("%.3f ms", 1000*s) },
}).Parse(pageHTML))

// Write writes the page as one HTML document.
func (p *Page) Write(w io.Writer) error {
	return page.Execute(w, struct {
		*Page
		Style template.CSS
	}{p, template.CSS(styleCSS)})
}
