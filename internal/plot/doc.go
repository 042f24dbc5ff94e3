// Package plot draws chainplan's pictures on gonum's plot library, in one style: the
// budget-versus-time frontier of a chain (Frontier, from FrontierOf), the memory timeline
// of a plan (Timeline, from TimelineOf), the Gantt chart of a pipeline plan (Pipeline) and
// the predicted-against-measured history of stored plans (History). Each returns a Figure,
// written as SVG or PNG.
//
// The pictures take plain data (the *Data types), so that a test can draw known values and
// check the picture's structure; the *Of functions compute that data from a chain and a
// plan with the planners and the simulators. Nothing here touches the store: the CLI
// (internal/cli) and the bindings (pybind) read it and pass what they found.
package plot
