#!/usr/bin/env bash
# Scaffold, replaced as the demo grows: shows the build works.
set -euo pipefail
"$1" version
