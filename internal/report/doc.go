// Package report writes `chainplan report`'s page: one self-contained HTML file about a
// stored run (its provenance, its stage table, the budget-versus-time frontier, the memory
// timeline of each stored plan and predicted against measured), with the pictures of
// internal/plot inlined as SVG and the style inlined as CSS. The page loads nothing: no
// script, no font, no image, no stylesheet from anywhere.
package report
