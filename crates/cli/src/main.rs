//! `url-dedup`: deduplicate URL lists with canonicalization, optional similarity folding and
//! state across runs. `url-dedup --help` explains the options; exit status 0 on success, 1 on
//! an I/O error, an unusable state file or a filter store (Redis) that stopped answering, 2 on a
//! usage error.

mod args;
mod config;
mod explain;
mod journal;
mod learn;
mod lines;
mod mismatch;
mod private_file;
mod run;
mod state;
mod stats;

use clap::Parser;

/// Why a run failed, and so its exit status.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The command line asks for something impossible (exit status 2).
    Usage(String),
    /// The run could not complete (exit status 1).
    Run(String),
}

fn main() {
    let mut args = args::Args::parse();
    let result = match args.command.take() {
        Some(args::Command::Learn(learn)) => learn::run(learn),
        None => run::run(args),
    };
    match result {
        Ok(()) => {}
        Err(Failure::Usage(message)) => {
            eprintln!("url-dedup: error: {message}");
            std::process::exit(2);
        }
        Err(Failure::Run(message)) => {
            eprintln!("url-dedup: error: {message}");
            std::process::exit(1);
        }
    }
}
