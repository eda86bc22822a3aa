#!/usr/bin/env bash
# The shared crawl's fault contract, measured end to end: two `crawler --redis` processes
# crawl the benchmark site (examples/crawler/examples/site.rs) while Redis is paused for 10 s,
# killed and restarted on its append-only file, failed over (a cluster of 3 masters with 2
# replicas each, the master of the crawl's own keys killed), or gone for good. Prints each
# process's exit status, the seconds from the fault to its exit, pages lost and pages
# fetched twice.
#
#   bash benches/faults.sh [PAGES] [RATE]      # defaults: 6000 pages, 150 pages/s per process
#
# Needs redis-server and redis-cli.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --profile dist -q -p url-dedup-crawler --bin crawler --example site
cargo build --profile dist -q -p url-dedup-benches --example crawl-faults
target/dist/examples/crawl-faults target/dist/crawler target/dist/examples/site "$@"
