// Package console walks the web console in a real browser: headless Chromium driven from Go
// with chromedp over the local stack (tests/stacktest), with authentication on. It signs in,
// opens each page, creates a simulation task (first with an error the API's validation names),
// watches it finish live, opens its report, reruns and compares it, and fails on any script
// exception or console error. Screenshots of each page are test artifacts; with
// LENS_UPDATE_SCREENSHOTS=1 the main pages' are written to docs/screenshots.
//
// Without Chromium (chromium or chromium-browser on PATH, or LENS_CHROMIUM) the test skips
// with one line saying so; .ci/run installs Debian's chromium.
//
// Like everything under tests/, it may import anything in the module.
package console
