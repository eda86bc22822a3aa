//! `--state` files hold the hash key: through the real binary, they are private, never
//! written through a link someone planted, and a damaged journal is reported with what it
//! costs instead of silently dropping what follows the damage.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command as Process, Stdio};

use assert_cmd::Command;

fn url_dedup() -> Command {
    Command::cargo_bin("url-dedup").unwrap()
}

fn urls(range: std::ops::Range<usize>) -> String {
    range.map(|i| format!("https://e.example/{i}\n")).collect()
}

fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn run(state: &Path, input: String) -> std::process::Output {
    url_dedup()
        .arg("--state")
        .arg(state)
        .write_stdin(input)
        .output()
        .unwrap()
}

/// `--state /dev/null` once created `/dev/null.journal`. A path that is not a regular file is
/// refused before anything is created.
#[cfg(unix)]
#[test]
fn a_state_that_is_no_regular_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Path::new("/dev/null.journal");
    let existed = journal.exists();
    for path in [Path::new("/dev/null"), dir.path()] {
        let out = run(path, urls(0..3));
        if !existed && journal.exists() {
            let _ = fs::remove_file(journal);
            panic!("--state /dev/null created /dev/null.journal");
        }
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not a regular file"), "{err}");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A symbolic link planted at the state's path, or at its journal's, is refused with an
/// error naming it; its target is left alone.
#[cfg(unix)]
#[test]
fn a_link_at_the_state_or_journal_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("someone-elses-file");
    fs::write(&target, b"precious").unwrap();
    let state = dir.path().join("seen.udd");
    for link in [state.clone(), dir.path().join("seen.udd.journal")] {
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let out = run(&state, urls(0..3));
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("symbolic link"), "{err}");
        assert!(err.contains(&link.display().to_string()), "{err}");
        assert!(out.stdout.is_empty());
        assert_eq!(fs::read(&target).unwrap(), b"precious");
        fs::remove_file(&link).unwrap();
    }
}

/// The final save once wrote `FILE.tmp.<pid>`, a name anyone could predict: a link planted
/// there while the run worked made the save overwrite the link's target with the state (hash
/// key inside) and left `FILE` a link. The temporary file now has a random name and is created
/// exclusively, so the planted link is never written through.
#[cfg(unix)]
#[test]
fn the_save_never_writes_through_a_planted_link() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.udd");
    let target = dir.path().join("someone-elses-file");
    fs::write(&target, b"precious").unwrap();
    let mut child = Process::new(env!("CARGO_BIN_EXE_url-dedup"))
        .args(["--checkpoint-every", "0", "--state"])
        .arg(&state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(urls(0..10).as_bytes()).unwrap();
    stdin.flush().unwrap();
    // Once it has printed, the run is past opening the state: plant links at the names a
    // save could take (the process id, as the old name had it).
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let planted = dir.path().join(format!("seen.udd.tmp.{}", child.id()));
    std::os::unix::fs::symlink(&target, &planted).unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(fs::read(&target).unwrap(), b"precious");
    let meta = fs::symlink_metadata(&state).unwrap();
    assert!(meta.is_file(), "the state became {:?}", meta.file_type());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // The next run finds its URLs.
    let out = run(&state, urls(0..12));
    assert_eq!(
        lines(&out.stdout),
        ["https://e.example/10", "https://e.example/11"]
    );
}

/// Where a journal's blocks start: each is `UDJ2`, a header, then its keys. Found by the
/// magic, which a key (a URL) cannot hold.
fn blocks(journal: &[u8]) -> Vec<usize> {
    journal
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == b"UDJ2")
        .map(|(at, _)| at)
        .collect()
}

/// A run killed after journaling `batches` checkpoints of 1,000 URLs each: its journal.
fn killed_run_journal(state: &Path, batches: usize) -> Vec<u8> {
    let journal = state.with_file_name("seen.udd.journal");
    let mut child = Process::new(env!("CARGO_BIN_EXE_url-dedup"))
        .args(["--checkpoint-every", "0.01", "--state"])
        .arg(state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for batch in 0..batches {
        stdin
            .write_all(urls(batch * 1_000..(batch + 1) * 1_000).as_bytes())
            .unwrap();
        stdin.flush().unwrap();
        for _ in 0..1_000 {
            line.clear();
            stdout.read_line(&mut line).unwrap();
        }
        // A checkpoint comes with the next block after the interval: wait for the journal to
        // hold this batch's last URL, nudging the run with a line it has seen.
        let last = format!("https://e.example/{}", (batch + 1) * 1_000 - 1);
        while !fs::read(&journal)
            .unwrap_or_default()
            .windows(last.len())
            .any(|w| w == last.as_bytes())
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
            stdin.write_all(b"https://e.example/0\n").unwrap();
            stdin.flush().unwrap();
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    fs::read(&journal).unwrap()
}

/// One flipped byte in a journal once dropped its block and every block after it without a
/// word (534,407 lines printed again instead of 45,714 from a 24.6 MB journal). Now the
/// damaged block is reported with the URLs it costs, and the blocks after it are replayed.
#[test]
fn a_flipped_byte_in_the_journal_costs_its_block_only() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.udd");
    let journal = dir.path().join("seen.udd.journal");
    let mut bytes = killed_run_journal(&state, 3);
    let starts = blocks(&bytes);
    assert!(starts.len() >= 3, "{} blocks", starts.len());
    // A byte inside the second block's keys.
    let second = starts[1];
    let end = starts[2];
    bytes[(second + end) / 2] ^= 0x20;
    fs::write(&journal, &bytes).unwrap();

    let out = run(&state, urls(0..3_000));
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("the block at byte {second} is damaged")),
        "{err}"
    );
    // What the second block held is printed again; the first and third are not.
    let again = lines(&out.stdout);
    let lost: usize = err
        .split("its ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {err}"));
    assert_eq!(again.len(), lost, "{err}");
    assert!(lost > 0 && lost < 3_000);
    assert!(!again.contains(&"https://e.example/0".to_owned()));
    assert!(!again.contains(&"https://e.example/2999".to_owned()));
    assert_eq!(fs::metadata(&journal).unwrap().len(), 0);
}

/// A journal of bytes no run wrote was once ignored without a word (and its state's URLs
/// printed again). It is refused, and left as it is.
#[test]
fn a_journal_of_foreign_bytes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.udd");
    assert!(run(&state, urls(0..5)).status.success());
    let journal = dir.path().join("seen.udd.journal");
    let mut x = 99u64;
    let garbage: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 40) as u8
        })
        .collect();
    fs::write(&journal, &garbage).unwrap();
    let out = run(&state, urls(0..10));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no readable block"), "{err}");
    assert_eq!(fs::read(&journal).unwrap(), garbage);
}
