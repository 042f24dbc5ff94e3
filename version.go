package chainplan

// Version is the release this source tree builds: the Python package's version
// (pyproject.toml, checked by TestVersionMatchesPyproject), recorded with every plan stored
// through the Python bindings. The CLI records `git describe` when built by the Makefile.
const Version = "0.1.0"
