//! The exact fingerprint of each HTML body named on standard input, as `--learn` computes it,
//! for `benches/dust-apps.sh`: it tells which fetches of a served application were one page.
//!
//! Reads one file path a line; prints `path<TAB>exact fingerprint<TAB>words`. A page with no
//! words is fingerprinted by its bytes, as the crawler does.

use std::io::{BufRead, Write};

use url_dedup_fingerprint::Fingerprinter;

fn main() -> std::io::Result<()> {
    let fingerprinter = Fingerprinter::new();
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in stdin.lock().lines() {
        let path = line?;
        let body = std::fs::read(&path)?;
        let fp = fingerprinter.fingerprint(&body);
        writeln!(out, "{path}\t{}\t{}", fp.exact, fp.words)?;
    }
    out.flush()
}
