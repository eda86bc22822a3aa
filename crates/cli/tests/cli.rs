//! The real `url-dedup` binary on messy input.

use std::fs;
use std::path::Path;

use assert_cmd::Command;

fn url_dedup() -> Command {
    Command::cargo_bin("url-dedup").unwrap()
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

    let out = url_dedup()
        .arg("--fpr")
        .arg("1.5")
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));

    let help = url_dedup().arg("--help").output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("Examples:"));
}

#[test]
fn runs_sharing_redis_print_each_url_once() {
    let Some(server) = url_dedup_redis::testing::RedisServer::start_or_skip("cli --redis") else {
        return;
    };
    let run = |input: &str| {
        let out = url_dedup()
            .arg("--redis")
            .arg(server.url())
            .arg("-n")
            .arg("10000")
            .write_stdin(input.to_owned())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        stdout_lines(&out)
    };
    assert_eq!(
        run("https://a.example/\nhttps://b.example/\n"),
        ["https://a.example/", "https://b.example/"]
    );
    // A second "machine": only what the first did not print.
    assert_eq!(
        run("https://B.example/\nhttps://c.example/\n"),
        ["https://c.example/"]
    );

    let out = url_dedup()
        .arg("--redis")
        .arg("redis://127.0.0.1:1/")
        .write_stdin("https://a.example/\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}
