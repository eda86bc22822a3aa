//! `url-dedup`: deduplicate URL lists with canonicalization, optional similarity folding and
//! state across runs. `url-dedup --help` explains the options; exit status 0 on success, 1 on
//! an I/O error, an unusable state file or a filter store (Redis) that stopped answering, 2 on a
//! usage error.

mod args;
mod lines;
mod run;
mod state;
mod stats;

use clap::Parser;

fn main() {
    let args = args::Args::parse();
    if let Err(message) = run::run(args) {
        eprintln!("url-dedup: error: {message}");
        std::process::exit(1);
    }
}
