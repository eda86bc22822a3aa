//! The real `url-dedup` binary on messy input.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use assert_cmd::Command;

fn url_dedup() -> Command {
    Command::cargo_bin("url-dedup").unwrap()
}

/// The number on the `--stats` line that starts with the word `name`.
fn stat(output: &std::process::Output, name: &str) -> u64 {
    let stats = String::from_utf8_lossy(&output.stderr);
    stats
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {stats}"))
}

fn stdout_lines(output: &std::process::Output) -> Vec<String> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn keeps_first_spelling_in_input_order() {
    let out = url_dedup()
        .write_stdin(
            "https://b.example/\nhttps://a.example/x?utm_source=mail\nhttps://B.EXAMPLE:443/\n\
             https://a.example/x\nhttps://a.example/x#frag\nhttps://c.example/\n",
        )
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        stdout_lines(&out),
        [
            "https://b.example/",
            "https://a.example/x?utm_source=mail",
            "https://c.example/"
        ]
    );
}

#[test]
fn messy_file_never_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("messy.txt");
    let mut data = Vec::new();
    data.extend_from_slice(b"https://ok.example/1\r\n");
    data.extend_from_slice(b"\n\n   \r\n");
    data.extend_from_slice(b"\xff\xfe\xfd invalid utf-8\n");
    data.extend_from_slice(b"relative/path.html\n");
    data.extend_from_slice(b"https://long.example/");
    data.extend(std::iter::repeat_n(b'a', 1 << 20)); // a 1 MiB line
    data.push(b'\n');
    data.extend_from_slice(b"https://ok.example/1\n");
    data.extend_from_slice(b"https://ok.example/2"); // no final newline
    fs::write(&path, &data).unwrap();

    let out = url_dedup().arg(&path).arg("--stats").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout_lines(&out),
        ["https://ok.example/1", "https://ok.example/2"]
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("not valid UTF-8"), "{err}");
    assert!(err.contains("not an absolute URL"), "{err}");
    assert!(err.contains("over --max-len"), "{err}");
    assert!(err.contains("invalid                3"), "{err}");
    assert!(err.contains("empty                  3"), "{err}");
    assert!(err.contains("duplicate              1"), "{err}");
}

#[test]
fn state_remembers_across_runs_like_anew() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.udd");
    let first = url_dedup()
        .arg("--state")
        .arg(&state)
        .write_stdin("https://a.example/\nhttps://b.example/\n")
        .output()
        .unwrap();
    assert!(first.status.success());
    assert_eq!(stdout_lines(&first).len(), 2);
    assert!(state.exists());

    let second = url_dedup()
        .arg("--state")
        .arg(&state)
        .write_stdin("https://b.example/\nhttps://c.example/\nhttps://A.example\n")
        .output()
        .unwrap();
    assert!(second.status.success());
    assert_eq!(stdout_lines(&second), ["https://c.example/"]);
}

#[test]
fn damaged_state_is_an_error_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("seen.udd");
    url_dedup()
        .arg("--state")
        .arg(&state)
        .write_stdin("https://a.example/\n")
        .assert()
        .success();
    let mut bytes = fs::read(&state).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    fs::write(&state, &bytes).unwrap();

    let out = url_dedup()
        .arg("--state")
        .arg(&state)
        .write_stdin("https://b.example/\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("checksum"),
        "{out:?}"
    );
    assert!(out.stdout.is_empty());
    assert_eq!(
        fs::read(&state).unwrap(),
        bytes,
        "a damaged state must not be overwritten"
    );
}

#[test]
fn explain_file_says_why_each_line_was_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let why = dir.path().join("why.tsv");
    let out = url_dedup()
        .arg("--similar")
        .arg(format!("--explain={}", why.display()))
        .write_stdin(
            "https://shop.example/list?sort=price\nhttps://shop.example/list?sort=price\n\
             https://shop.example/list?sort=name\nftp://x.example/\n",
        )
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(stdout_lines(&out), ["https://shop.example/list?sort=price"]);
    let text = fs::read_to_string(&why).unwrap();
    let kinds: Vec<&str> = text
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(kinds, ["duplicate", "similar", "invalid"], "{text}");
}

#[test]
fn raw_mode_is_byte_exact() {
    let out = url_dedup()
        .arg("--raw")
        .write_stdin("https://a.example/\nhttps://A.example/\nnot a url\nnot a url\n")
        .output()
        .unwrap();
    assert_eq!(
        stdout_lines(&out),
        ["https://a.example/", "https://A.example/", "not a url"]
    );
}

#[test]
fn canonical_output_and_multiple_files() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    fs::write(&a, "HTTP://Example.COM:80/a/../b?z=1&a=2\n").unwrap();
    fs::write(&b, "http://example.com/b?a=2&z=1\nhttp://example.com/c\n").unwrap();
    let out = url_dedup()
        .arg("--canonical")
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(
        stdout_lines(&out),
        ["http://example.com/b?a=2&z=1", "http://example.com/c"]
    );
}

#[test]
fn exit_codes() {
    let missing = Path::new("/nonexistent/urls.txt");
    let out = url_dedup().arg(missing).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));

    let out = url_dedup().arg("--no-such-flag").output().unwrap();
    assert_eq!(out.status.code(), Some(2));

    // Out-of-range numbers are usage errors too, as the documented codes say.
    for args in [
        ["--fpr", "1.5"],
        ["--fpr", "2"],
        ["--fpr", "0"],
        ["-n", "0"],
    ] {
        let out = url_dedup().args(args).write_stdin("").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }

    let help = url_dedup().arg("--help").output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("Examples:"));
}

#[test]
fn runs_sharing_redis_print_each_url_once() {
    let Some(mut server) = url_dedup_redis::testing::RedisServer::start_or_skip("cli --redis")
    else {
        return;
    };
    // Stdout, and whether stderr said the run created the shared filter.
    let run = |url: &str, input: &str| {
        let out = url_dedup()
            .arg("--redis")
            .arg(url)
            .arg("-n")
            .arg("10000")
            .write_stdin(input.to_owned())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let created = String::from_utf8_lossy(&out.stderr).contains("created the shared filter");
        (stdout_lines(&out), created)
    };
    let url = server.url();
    let (first, created) = run(&url, "https://a.example/\nhttps://b.example/\n");
    assert_eq!(first, ["https://a.example/", "https://b.example/"]);
    assert!(created, "the first run creates the filter, and says so");
    // A second "machine": only what the first did not print, and nothing to say.
    let (second, created) = run(&url, "https://B.example/\nhttps://c.example/\n");
    assert_eq!(second, ["https://c.example/"]);
    assert!(!created);
    // Redis restarts without persistence between runs: the next run finds no filter, prints
    // every URL again, and says why.
    server.restart().unwrap();
    let (third, created) = run(&url, "https://a.example/\n");
    assert_eq!(third, ["https://a.example/"]);
    assert!(created, "a run that finds Redis emptied must say so");

    let out = url_dedup()
        .arg("--redis")
        .arg("redis://127.0.0.1:1/")
        .write_stdin("https://a.example/\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

/// One input line of [`mixed_input`] and what the command should make of it.
enum Expect {
    /// A URL naming page `page`, whose canonical form is `canonical`.
    Url {
        page: usize,
        canonical: String,
    },
    Empty,
    /// Reported as invalid, with this start of the reason.
    Invalid(&'static str),
}

/// `n` lines crossing several batches of 1,024: each page is spelled three ways and comes back
/// right away (within a batch), about one batch later (across a boundary) and at random
/// places; invalid, non-UTF-8 and empty lines are scattered in the middle of batches.
fn mixed_input(n: usize) -> (Vec<u8>, Vec<(Vec<u8>, Expect)>) {
    let mut lines = Vec::with_capacity(n);
    for i in 0..n {
        let line = if i % 613 == 7 {
            (
                format!("relative/path/{i}").into_bytes(),
                Expect::Invalid("invalid URL"),
            )
        } else if i % 877 == 100 {
            (
                b"\xff\xfe not UTF-8".to_vec(),
                Expect::Invalid("not valid UTF-8"),
            )
        } else if i % 1_000 == 555 {
            (b"   ".to_vec(), Expect::Empty)
        } else {
            let page = match i % 4 {
                0 => i,
                1 => i - 1,
                2 => i.saturating_sub(1_026) / 4 * 4,
                _ => (i * 7_919) % n / 4 * 4,
            };
            let host = page % 7;
            let text = match i % 3 {
                0 => format!("https://site{host}.example/p/{page}"),
                1 => format!("HTTPS://SITE{host}.EXAMPLE:443/p/{page}#frag"),
                _ => format!("https://site{host}.example/p/{page}?utm_source=x"),
            };
            let canonical = format!("https://site{host}.example/p/{page}");
            (text.into_bytes(), Expect::Url { page, canonical })
        };
        lines.push(line);
    }
    let mut input = Vec::new();
    for (line, _) in &lines {
        input.extend_from_slice(line);
        input.push(b'\n');
    }
    (input, lines)
}

/// What one line at a time gives: stdout (the line, or its canonical form, at the first
/// occurrence of each page) and `--explain` records for input `name`.
fn expected_output(lines: &[(Vec<u8>, Expect)], canonical: bool) -> (Vec<String>, Vec<String>) {
    let mut first = std::collections::HashMap::new();
    let (mut out, mut explain) = (Vec::new(), Vec::new());
    for (number, (bytes, expect)) in (1..).zip(lines) {
        let text = String::from_utf8_lossy(bytes);
        match expect {
            Expect::Url { page, canonical: c } => match first.get(page) {
                None => {
                    first.insert(*page, number);
                    out.push(if canonical {
                        c.clone()
                    } else {
                        text.into_owned()
                    });
                }
                Some(earlier) => explain.push(format!(
                    "duplicate\t{{name}}:{number}\t{text}\t{{name}}:{earlier}\tsame canonical form"
                )),
            },
            Expect::Empty => {}
            Expect::Invalid(reason) => explain.push(format!(
                "invalid\t{{name}}:{number}\t{}\t-\t{reason}",
                escaped(bytes)
            )),
        }
    }
    (out, explain)
}

/// A field of `--explain` as the command escapes it: `\`, tab, CR, LF, other control bytes
/// and bytes that are not UTF-8.
fn escaped(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                c if c.is_ascii_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// `explain` equals `expected` (in which `{name}` stands for the input's name) up to the end of
/// each invalid line's reason.
fn assert_explain(explain: &str, expected: &[String], name: &str) {
    let explain: Vec<&str> = explain.lines().collect();
    assert_eq!(explain.len(), expected.len());
    for (got, want) in explain.iter().zip(expected) {
        let want = want.replace("{name}", name);
        assert!(got.starts_with(&want), "got {got:?}, want {want:?}");
    }
}

#[test]
fn batches_decide_exactly_as_one_line_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let (input, lines) = mixed_input(5_000);
    let path = dir.path().join("urls.txt");
    fs::write(&path, &input).unwrap();
    let why = dir.path().join("why.tsv");
    let name = path.display().to_string();
    for canonical in [false, true] {
        let (want_out, want_explain) = expected_output(&lines, canonical);
        assert!(
            want_out.len() > 1_000 && want_explain.len() > 3_000,
            "{} {}",
            want_out.len(),
            want_explain.len()
        );
        // A regular file is read in full batches; a pipe splits them where its writes fall.
        for from_stdin in [false, true] {
            let mut cmd = url_dedup();
            cmd.arg(format!("--explain={}", why.display()));
            if canonical {
                cmd.arg("--canonical");
            }
            if from_stdin {
                cmd.write_stdin(input.clone());
            } else {
                cmd.arg(&path);
            }
            let out = cmd.output().unwrap();
            assert!(out.status.success(), "{out:?}");
            assert_eq!(
                stdout_lines(&out),
                want_out,
                "canonical {canonical}, stdin {from_stdin}"
            );
            let name = if from_stdin { "<stdin>" } else { &name };
            assert_explain(&fs::read_to_string(&why).unwrap(), &want_explain, name);
        }
    }
}

#[test]
fn invalid_lines_inside_a_batch_are_reported_with_their_line_numbers() {
    let (input, lines) = mixed_input(3_000);
    let out = url_dedup()
        .arg("--stats")
        .write_stdin(input)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    // Without --explain the first five invalid lines are shown, then a count.
    let shown: Vec<&str> = err.lines().filter(|l| l.contains(": skipped: ")).collect();
    let want: Vec<String> = (1..)
        .zip(&lines)
        .filter_map(|(n, (_, e))| match e {
            Expect::Invalid(reason) => Some(format!("url-dedup: <stdin>:{n}: skipped: {reason}")),
            _ => None,
        })
        .collect();
    assert_eq!(shown.len(), 5, "{err}");
    for (got, want) in shown.iter().zip(&want) {
        assert!(got.starts_with(want.as_str()), "got {got:?}, want {want:?}");
    }
    assert!(
        err.contains(&format!("url-dedup: {} invalid lines in all", want.len())),
        "{err}"
    );
    assert!(
        err.contains(&format!("lines       {:>12}", lines.len())),
        "{err}"
    );
    assert!(
        err.contains(&format!("invalid     {:>12}", want.len())),
        "{err}"
    );
}

/// Kills the child if a test fails before it exits.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_slow_producer_gets_answers_before_it_closes_the_input() {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_url-dedup"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Reaped(child);
    let mut stdin = child.0.stdin.take().unwrap();
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let next = || {
        rx.recv_timeout(Duration::from_secs(120))
            .expect("no answer within 10 s while the input stayed open")
    };

    stdin
        .write_all(b"https://a.example/\nhttps://A.example/#x\nhttps://b.example/\n")
        .unwrap();
    stdin.flush().unwrap();
    assert_eq!(next(), "https://a.example/");
    assert_eq!(next(), "https://b.example/");
    // Later lines too, and the state carries over from the batches before.
    stdin
        .write_all(b"https://b.example/\nhttps://c.example/\n")
        .unwrap();
    stdin.flush().unwrap();
    assert_eq!(next(), "https://c.example/");

    drop(stdin);
    assert!(child.0.wait().unwrap().success());
    reader.join().unwrap();
    assert!(rx.try_recv().is_err(), "nothing more to print");
}

#[test]
fn thousands_of_lines_through_redis_and_nothing_new_the_second_time() {
    let Some(server) = url_dedup_redis::testing::RedisServer::start_or_skip("cli --redis batches")
    else {
        return;
    };
    let (input, lines) = mixed_input(4_000);
    let (want_out, want_explain) = expected_output(&lines, false);
    let dir = tempfile::tempdir().unwrap();
    let why = dir.path().join("why.tsv");
    let run = || {
        let out = url_dedup()
            .arg("--redis")
            .arg(server.url())
            .arg("-n")
            .arg("100000")
            .arg(format!("--explain={}", why.display()))
            .write_stdin(input.clone())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        stdout_lines(&out)
    };
    assert_eq!(run(), want_out);
    assert_explain(&fs::read_to_string(&why).unwrap(), &want_explain, "<stdin>");
    // Another run, as another machine would: every URL is now known to Redis.
    assert_eq!(run(), Vec::<String>::new());
    let explain = fs::read_to_string(&why).unwrap();
    let duplicates = explain
        .lines()
        .filter(|l| l.starts_with("duplicate\t"))
        .count();
    let urls = lines
        .iter()
        .filter(|(_, e)| matches!(e, Expect::Url { .. }))
        .count();
    assert_eq!(duplicates, urls);
}

#[test]
fn a_closed_output_stops_the_run_and_saves_no_state() {
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = mixed_input(100_000);
    let path = dir.path().join("urls.txt");
    fs::write(&path, &input).unwrap();
    let state = dir.path().join("seen.udd");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_url-dedup"))
        .arg("--state")
        .arg(&state)
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Reaped(child);
    // Like `| head -1`: read one line, then close the pipe while output is still coming.
    let mut first = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "https://site0.example/p/0\n");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut err).unwrap();
    assert!(child.0.wait().unwrap().success(), "{err}");
    assert!(
        err.contains("output closed early; state left as it was"),
        "{err}"
    );
    assert!(!state.exists());
    // Nothing of the run was journaled either: the next run prints everything again.
    let journal = dir.path().join("seen.udd.journal");
    assert_eq!(fs::metadata(&journal).unwrap().len(), 0);
}

#[test]
fn named_conventions_and_surt_keys() {
    let out = url_dedup()
        .arg("--surt")
        .write_stdin("https://www.Example.com/a?b=1\nhttps://example.org/\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout_lines(&out), ["com,example)/a?b=1", "org,example)/"]);
    // w3lib keeps blank values and their order-independent sort; the crawler policy drops
    // tracking parameters, w3lib does not.
    let input = "https://example.com/?utm_source=x&a=1\nhttps://example.com/?a=1\n";
    let crawler = url_dedup().write_stdin(input).output().unwrap();
    assert_eq!(stdout_lines(&crawler).len(), 1);
    let w3lib = url_dedup()
        .args(["--policy", "w3lib"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(stdout_lines(&w3lib).len(), 2);
    // A convention reproduces its project exactly: no switch may change it.
    let out = url_dedup()
        .args(["--policy", "w3lib", "--keep-session"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = url_dedup()
        .args(["--policy", "nonsense"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("safe-browsing"));
}

#[test]
fn a_key_file_keeps_the_key_out_of_redis() {
    let Some(server) = url_dedup_redis::testing::RedisServer::start_or_skip("cli key file") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("crawl.key");
    fs::write(&key, "00112233445566778899aabbccddeeff\n").unwrap();
    let run = |with_key: bool, input: &str| {
        let mut cmd = url_dedup();
        cmd.args(["--redis", &server.url(), "-n", "1000"]);
        if with_key {
            cmd.arg("--key-file").arg(&key);
        }
        cmd.write_stdin(input.to_owned()).output().unwrap()
    };
    let first = run(true, "https://a.example/\n");
    assert!(first.status.success(), "{first:?}");
    let without = run(false, "https://a.example/\n");
    assert_eq!(without.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&without.stderr).contains("supply the key"));
    let again = run(true, "https://a.example/\nhttps://b.example/\n");
    assert_eq!(stdout_lines(&again), ["https://b.example/"]);
    fs::write(&key, "not a key").unwrap();
    assert_eq!(run(true, "").status.code(), Some(2));
}

/// `--redis` takes a Redis Cluster's seeds: the filter's keys spread over its masters, and a
/// second run, as another machine's, prints nothing again.
#[test]
fn runs_on_a_redis_cluster_print_each_url_once() {
    let Some(cluster) =
        url_dedup_redis::testing::RedisCluster::start_or_skip("cli --redis cluster", 3, 0)
    else {
        return;
    };
    let (input, lines) = mixed_input(3_000);
    let (want_out, _) = expected_output(&lines, false);
    let run = || {
        let out = url_dedup()
            .arg("--redis")
            .arg(cluster.url())
            .arg("-n")
            .arg("100000")
            .write_stdin(input.clone())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        stdout_lines(&out)
    };
    assert_eq!(run(), want_out);
    assert_eq!(run(), Vec::<String>::new());
}

/// `--similar-fpr` sizes the similarity filter at its own rate: fewer bytes, the same folds on
/// a list without chance matches; without `--similar` it is a usage error.
#[test]
fn the_similarity_filter_takes_a_rate_of_its_own() {
    let input: String = (0..2_000)
        .map(|i| format!("https://s{}.example/d{i}/p.html?ref={}\n", i % 40, i % 3))
        .collect();
    // One fixed key for every run: each run's own random key could fold by chance.
    let run = |extra: &[&str]| {
        let out = url_dedup()
            .env("URL_DEDUP_KEY", "00112233445566778899aabbccddeeff")
            .args(["--stats", "-n", "5000"])
            .args(extra)
            .write_stdin(input.clone())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        (stdout_lines(&out), stat(&out, "filter"))
    };
    let (exact, exact_bytes) = run(&[]);
    for preset in ["--similar", "--similar=crawler"] {
        let (strict, strict_bytes) = run(&[preset]);
        let (loose, loose_bytes) = run(&[preset, "--similar-fpr", "1e-5"]);
        assert_eq!(loose, strict);
        assert_eq!(strict.len(), 2_000);
        assert_eq!(strict, exact);
        // The similarity filter's own bytes, beside the exact filter's.
        let (strict_bytes, loose_bytes) = (strict_bytes - exact_bytes, loose_bytes - exact_bytes);
        assert!(
            loose_bytes * 2 < strict_bytes,
            "{preset}: {loose_bytes} vs {strict_bytes}"
        );
    }
    let alone = url_dedup()
        .args(["--similar-fpr", "1e-5"])
        .write_stdin("https://a.example/\n")
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(2));
}

/// `--similar` (the page preset) keeps and drops the lines `--similar=crawler` does,
/// presentation variants and repeats among them, in a seventh of the similarity filter's
/// memory.
#[test]
fn the_page_preset_folds_as_the_crawler_preset() {
    // Each page three times, under three presentation parameters; every page on one of a few
    // sites and directories, so that their other features recur.
    let input: String = (0..3_000)
        .map(|i| {
            let page = i / 3;
            format!(
                "https://s{}.example/d{}/p{page}.html?id={}&sort={}\n",
                page % 7,
                page % 11,
                page % 5,
                ["name", "price", "date"][i % 3]
            )
        })
        .collect();
    let run = |preset: &str| {
        let out = url_dedup()
            .args([preset, "--stats", "-n", "5000"])
            .write_stdin(input.clone())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        (
            stdout_lines(&out),
            stat(&out, "similar"),
            stat(&out, "filter"),
        )
    };
    let (crawler, crawler_similar, crawler_bytes) = run("--similar=crawler");
    let (page, page_similar, page_bytes) = run("--similar");
    assert_eq!(run("--similar=page").0, page);
    assert_eq!(page, crawler);
    assert_eq!(page_similar, crawler_similar);
    assert_eq!(crawler_similar, 2_000);
    assert!(
        page_bytes * 3 < crawler_bytes,
        "{page_bytes} vs {crawler_bytes}"
    );
}

/// `--feature-hashing` moves `--similar`'s feature hashing between the deciding thread and the
/// workers; the output is the same either way, over several blocks and a similarity filter
/// that grows, and without `--similar` the option is a usage error.
#[test]
fn features_hashed_on_the_workers_fold_as_on_the_decider() {
    let input: String = (0..30_000u32)
        .map(|i| {
            // Each page comes three times, in a different variant each time.
            let page = i.wrapping_mul(7_919) % 12_000;
            let variant = ["", "?ref=rss", "?sort=name", "?id=7"][((i + i / 12_000) % 4) as usize];
            format!(
                "https://s{}.example/d{}/item-{page}.html{variant}\n",
                page % 30,
                page % 7
            )
        })
        .collect();
    for preset in ["--similar", "--similar=crawler"] {
        // One fixed key for every run, so the runs differ only in where features are hashed.
        let run = |place: &str| {
            let out = url_dedup()
                .env("URL_DEDUP_KEY", "00112233445566778899aabbccddeeff")
                .args([preset, "--stats", "-n", "100", "--feature-hashing", place])
                .write_stdin(input.clone())
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            (stdout_lines(&out), stat(&out, "similar"))
        };
        let (on_decider, folded) = run("decider");
        assert!(folded > 1_000, "{preset}: {folded} folded");
        assert_eq!(run("workers"), (on_decider.clone(), folded));
        assert_eq!(run("auto"), (on_decider, folded));
    }
    let alone = url_dedup()
        .args(["--feature-hashing", "workers"])
        .write_stdin("https://a.example/\n")
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(2));
}
