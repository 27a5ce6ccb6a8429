#!/bin/bash
# Runs the selected test files (one comma-separated argument, as the Pro harness passes them),
# or the whole suite without arguments. Called from the repository root (/app).
set -uo pipefail

run_all_tests() {
  python3 -m pytest -v -p no:cacheprovider tests
}

run_selected_tests() {
  python3 -m pytest -v -p no:cacheprovider "$@"
}

if [ $# -eq 0 ]; then
  run_all_tests
  exit $?
fi

if [[ "$1" == *","* ]]; then
  IFS=',' read -r -a test_files <<< "$1"
else
  test_files=("$@")
fi
run_selected_tests "${test_files[@]}"
