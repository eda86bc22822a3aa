//! The promise of the command: it never drops a distinct URL that the user did not ask to
//! drop, and never destroys its input. Each test reproduces a way a real run once lost URLs.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;

/// A hash key of the tests' own, so a false positive of a random key cannot fail them.
const FIXED_KEY: &str = "00112233445566778899aabbccddeeff";

fn url_dedup() -> Command {
    Command::cargo_bin("url-dedup").unwrap()
}

fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn urls(range: std::ops::Range<usize>) -> String {
    range.map(|i| format!("https://e.example/{i}\n")).collect()
}

/// `--explain urls.txt` once took `urls.txt` as the explain file: it truncated the input to
/// nothing, read standard input instead and exited 0.
#[test]
fn an_option_value_never_swallows_an_input_path() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("urls.txt");
    fs::write(
        &input,
        "https://a.example/\nhttps://a.example/\nhttps://b.example/\n",
    )
    .unwrap();
    for option in ["--explain", "--similar"] {
        let out = url_dedup().arg(option).arg(&input).output().unwrap();
        assert!(out.status.success(), "{option}: {out:?}");
        assert_eq!(
            lines(&out.stdout),
            ["https://a.example/", "https://b.example/"],
            "{option}"
        );
        assert_eq!(
            fs::read(&input).unwrap().len(),
            57,
            "{option} changed the input"
        );
    }
    let out = url_dedup().arg("--explain").arg(&input).output().unwrap();
    let explained = String::from_utf8_lossy(&out.stderr).into_owned();
    let name = input.display();
    assert!(
        explained.contains(&format!(
            "duplicate\t{name}:2\thttps://a.example/\t{name}:1\t"
        )),
        "{explained}"
    );
    let out = url_dedup()
        .arg("--similar=document004")
        .arg(&input)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// No output path may be one of the inputs, whatever the path that names it.
#[test]
fn an_input_file_is_never_opened_for_writing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("urls.txt");
    let original = "https://a.example/\n";
    fs::write(&input, original).unwrap();
    let other_name = dir.path().join(".").join("urls.txt");
    for args in [
        vec![format!("--explain={}", other_name.display())],
        vec!["--state".to_owned(), other_name.display().to_string()],
    ] {
        let out = url_dedup().args(&args).arg(&input).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("also an input file"));
        assert!(out.stdout.is_empty());
        assert_eq!(fs::read_to_string(&input).unwrap(), original);
    }
}

/// A filter sized from a guess once lost distinct URLs once the guess was passed (sized by
/// input bytes / 32, or by a wrong `-n`). The filter now grows; at the default rate a list
/// this size loses a URL with probability about 10^-4.
#[test]
fn a_wrong_size_estimate_loses_no_url() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("urls.txt");
    // 200,000 distinct short URLs, each twice, then all again: sized for a hundredth of that.
    let mut data = urls(0..200_000);
    data.push_str(&urls(0..200_000));
    fs::write(&input, &data).unwrap();
    // A fixed key: with a random one, a false positive lost a URL about once in 10^4 runs.
    let out = url_dedup()
        .env("URL_DEDUP_KEY", FIXED_KEY)
        .args(["-n", "2000", "--stats"])
        .arg(&input)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let kept = lines(&out.stdout);
    assert_eq!(kept.len(), 200_000, "distinct URLs lost");
    assert_eq!(kept[199_999], "https://e.example/199999");
    let stats = String::from_utf8_lossy(&out.stderr);
    assert!(stats.contains("lost        "), "{stats}");
    assert!(
        stats.contains("e-"),
        "an expectation far below one: {stats}"
    );
}

/// The default policy once removed `sid`, the story id of Slash and PHP-Nuke sites, and
/// printed one of these two stories.
#[test]
fn story_ids_named_sid_are_kept() {
    let out = url_dedup()
        .write_stdin(
            "https://yro.slashdot.org/article.pl?sid=01/05/17/222314\n\
             https://yro.slashdot.org/article.pl?sid=02/06/28/1257205\n\
             https://example.com/modules.php?name=News&file=article&sid=123\n\
             https://example.com/modules.php?name=News&file=article&sid=124\n",
        )
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(lines(&out.stdout).len(), 4);
}

/// A byte order mark made the first URL invalid; NUL and bare carriage returns were echoed;
/// `--raw` dropped lines that were not UTF-8. `--raw` now keeps every line as `awk` does.
#[test]
fn lines_keep_their_urls_and_the_output_stays_clean() {
    let input: &[u8] = b"\xef\xbb\xbfhttps://first.example/\n\
        https://nul.example/\0x\n\
        https://cr.example/\rfake\n\
        https://caf\xe9.example/\n\
        https://last.example/\n";
    let out = url_dedup()
        .arg("--stats")
        .write_stdin(input)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        lines(&out.stdout),
        ["https://first.example/", "https://last.example/"]
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("<stdin>:2: skipped: contains a NUL byte"),
        "{err}"
    );
    assert!(
        err.contains("<stdin>:3: skipped: contains a carriage return"),
        "{err}"
    );
    assert!(err.contains("<stdin>:4: skipped: not valid UTF-8"), "{err}");
    assert!(
        err.contains("invalid     ") && err.contains("           3\n"),
        "{err}"
    );

    let out = url_dedup()
        .arg("--raw")
        .write_stdin(input)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, input);
}

/// A state built with `--raw` was silently used by a canonicalizing run, which then called
/// distinct pages "seen".
#[test]
fn a_state_is_refused_under_other_options() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.udd");
    let out = url_dedup()
        .arg("--raw")
        .arg("--state")
        .arg(&state)
        .write_stdin("https://Example.com/a\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = url_dedup()
        .arg("--state")
        .arg(&state)
        .write_stdin("https://example.com/a\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("was written with other options"), "{err}");
    assert!(err.contains("state: --raw; this run: no --raw"), "{err}");
    assert!(err.contains("--force-state"), "{err}");
    let out = url_dedup()
        .arg("--state")
        .arg(&state)
        .arg("--force-state")
        .write_stdin("https://example.com/b\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn a_state_file_is_private_whole_and_checked_before_any_output() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.udd");
    let run = |input: &str, state: &Path| {
        url_dedup()
            .arg("--state")
            .arg(state)
            .write_stdin(input.to_owned())
            .output()
            .unwrap()
    };
    // A temporary file left by a save that was killed is cleaned up by the next run.
    let stale = dir.path().join("seen.udd.tmp.4242");
    fs::write(&stale, vec![0u8; 4096]).unwrap();
    assert!(run("https://a.example/\n", &state).status.success());
    assert!(!stale.exists(), "stale temporary file left behind");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for file in [state.clone(), dir.path().join("seen.udd.journal")] {
            let mode = fs::metadata(&file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", file.display());
        }
    }
    // Bytes after a valid state: damage, not ignorable.
    let mut bytes = fs::read(&state).unwrap();
    bytes.extend_from_slice(b"garbage");
    fs::write(&state, &bytes).unwrap();
    let out = run("https://b.example/\n", &state);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("7 bytes follow the state"));
    assert!(out.stdout.is_empty());
    // A state in a directory that does not exist is an error before anything is printed.
    let out = run("https://b.example/\n", &dir.path().join("missing/seen.udd"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "output printed before the state was found unusable"
    );
}

#[test]
fn two_runs_on_one_state_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.udd");
    let mut first = Process::new(env!("CARGO_BIN_EXE_url-dedup"))
        .arg("--state")
        .arg(&state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The first run holds the state once it has printed something.
    let mut stdin = first.stdin.take().unwrap();
    stdin.write_all(b"https://a.example/\n").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    BufReader::new(first.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let second = url_dedup()
        .arg("--state")
        .arg(&state)
        .write_stdin("https://b.example/\n")
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("in use by another url-dedup run"));
    drop(stdin);
    assert!(first.wait().unwrap().success());
}

/// Killed before its final save, a run once left nothing behind, and the next run printed
/// again everything it had printed. Now the next run prints again at most what came after the
/// last checkpoint.
#[test]
fn a_killed_run_is_reprinted_only_since_its_last_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.udd");
    let journal = dir.path().join("seen.udd.journal");
    let mut child = Process::new(env!("CARGO_BIN_EXE_url-dedup"))
        .args(["--checkpoint-every", "0.05", "--state"])
        .arg(&state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // The first 5,000 URLs, read back as they are printed; then one more line, so a batch
    // boundary (and with it a checkpoint) comes after the first 5,000 were flushed.
    stdin.write_all(urls(0..5_000).as_bytes()).unwrap();
    stdin.flush().unwrap();
    let mut printed = 0;
    let mut line = String::new();
    while printed < 5_000 {
        line.clear();
        stdout.read_line(&mut line).unwrap();
        printed += 1;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while fs::metadata(&journal).map_or(0, |m| m.len()) < 5_000 * 20 {
        assert!(Instant::now() < deadline, "no checkpoint was written");
        std::thread::sleep(Duration::from_millis(60));
        stdin.write_all(b"https://tick.example/\n").unwrap();
        stdin.flush().unwrap();
    }
    child.kill().unwrap(); // SIGKILL: no final save
    child.wait().unwrap();
    assert!(!state.exists());

    let out = url_dedup()
        .arg("--state")
        .arg(&state)
        .write_stdin(urls(0..6_000))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let again = lines(&out.stdout);
    assert_eq!(
        again.len(),
        1_000,
        "reprinted what the killed run had checkpointed"
    );
    assert_eq!(again[0], "https://e.example/5000");
    assert!(String::from_utf8_lossy(&out.stderr).contains("recovered from"));
    assert_eq!(fs::metadata(&journal).unwrap().len(), 0);
}

/// A full disk while journaling ends the run with an error; what was printed is complete, and
/// the state stays usable.
#[cfg(unix)]
#[test]
fn a_full_disk_stops_the_run_with_a_usable_state() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.udd");
    // A first run leaves a small state.
    let out = url_dedup()
        .arg("--state")
        .arg(&state)
        .write_stdin(urls(0..10))
        .output()
        .unwrap();
    assert!(out.status.success());
    // Files this process writes may not pass 64 KiB: the journal hits the limit like a full
    // disk (EFBIG instead of ENOSPC; the shell ignores SIGXFSZ so the write fails instead).
    let script = format!(
        "trap '' XFSZ; ulimit -f 128; exec {} --checkpoint-every 0 --state {}",
        env!("CARGO_BIN_EXE_url-dedup"),
        state.display()
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .write_stdin(urls(0..200_000))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot"),
        "{out:?}"
    );
    // The old state is intact and usable.
    let out = url_dedup()
        .arg("--state")
        .arg(&state)
        .write_stdin(urls(0..12))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        lines(&out.stdout),
        ["https://e.example/10", "https://e.example/11"]
    );
}

/// The similarity filter once kept the size it was built with while the exact filter grew: a
/// run handed far more URLs than its estimate folded distinct pages by chance without a word
/// (3,000 distinct pages with `-n 20`: most of them). Now it grows too, and keeps its rate.
#[test]
fn a_wrong_size_estimate_folds_no_distinct_page() {
    let input: String = (0..3_000)
        .map(|i| format!("https://site{i}.example/dir{i}/page{i}.html?id={i}\n"))
        .collect();
    for n in ["20", "3000"] {
        let out = url_dedup()
            .env("URL_DEDUP_KEY", FIXED_KEY)
            .args(["--similar", "--stats", "-n", n])
            .write_stdin(input.clone())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let stats = String::from_utf8_lossy(&out.stderr);
        assert_eq!(lines(&out.stdout).len(), 3_000, "-n {n}: {stats}");
        assert!(!stats.contains("warning"), "{stats}");
        assert!(stats.contains("similar rate"), "{stats}");
    }
}
