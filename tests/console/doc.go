// Package console walks the web console in a real browser: headless Chromium driven from Go
// with chromedp over the local stack (tests/stacktest), with authentication on. It signs in,
// opens each page, creates a simulation task (first with an error the API's validation names),
// watches it finish live, opens its report, reruns and compares it, and fails on any script
// exception or console error. It submits the new-evaluation form's template as it stands, reads
// the run page as the run's report and the evaluation page's numbers, intervals and parity.
// Every page is looked at 1400 and 800 px wide: no text of a chart may overlap another, and a
// small full-page screenshot of each is a test artifact; with LENS_UPDATE_SCREENSHOTS=1 they are
// written to docs/screenshots as <page>-<width>.png.
//
// Without Chromium (chromium or chromium-browser on PATH, or LENS_CHROMIUM) the test skips
// with one line saying so; .ci/run installs Debian's chromium.
//
// Like everything under tests/, it may import anything in the module.
package console
