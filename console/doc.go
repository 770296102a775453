// Package console is Stile's console: one static web app (static/: HTML,
// CSS and JS, no build step) that talks only to the documented JSON API.
// `stile dev` serves it at /console (Handler), and `stile build` writes it
// into the Worker's bundle (Module), which serves it at /console too. The
// shell is public and holds no data; the user signs in with a token kept
// in sessionStorage, and every data call carries it as a Bearer header.
package console
