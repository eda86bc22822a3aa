#!/usr/bin/env bash
# The project's test command (README): every crate's unit, integration, property and doc tests,
# with every feature on, so serde and the optional backends are tested too; then the Python
# bindings' and Scrapy dupefilters' tests (pytest). Arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
cargo test --workspace --all-features "$@"
bash crates/python/test.sh
