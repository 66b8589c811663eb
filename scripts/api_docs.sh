#!/usr/bin/env bash
# The API reference: Doxygen over the installed public headers (core/, autodiff/, ops/, distributed/;
# the internal *_detail.hpp headers are left out), built from their comments into
# build-docs/html/index.html. Any Doxygen warning fails the run (docs/doxygen/Doxyfile).
# Needs doxygen (scripts/install-deps.sh --test installs it). scripts/test.sh runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build-docs
doxygen docs/doxygen/Doxyfile
echo "API reference: build-docs/html/index.html"
