//! Each flag does what `--help` says, through the real binary: `--surt`, `--raw`,
//! `--explain`, the conventions' inputs, and the usage errors of flags that cannot combine.

use std::collections::HashSet;

use assert_cmd::Command;

fn url_dedup() -> Command {
    Command::cargo_bin("url-dedup").unwrap()
}

fn run(args: &[&str], input: impl Into<Vec<u8>>) -> std::process::Output {
    url_dedup().args(args).write_stdin(input).output().unwrap()
}

fn stdout(output: &std::process::Output) -> Vec<String> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `--policy surt --surt` once applied SURT twice (`com,example))/a`), and plain `--surt`
/// took the SURT of the crawler policy's form: `http://www.example.com/a` and
/// `https://example.com/a/` were printed as the same key twice, and the records CDX files
/// hold (`dns:`, `filedesc:`, `warcinfo:`, `whois:`, `mailto:`) were skipped as invalid.
#[test]
fn surt_is_the_key_of_the_surt_package() {
    let out = run(
        &["--policy", "surt", "--surt"],
        "http://www.example.com/a\n",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), ["com,example)/a"]);
    let out = run(
        &["--surt"],
        "http://www.example.com/a\nhttps://example.com/a/\ndns:archive.org\n\
         filedesc:IA-FOO.arc.gz\nwarcinfo:/foo.warc.gz/1.0\nwhois://whois.arin.net/1.2.3.4\n\
         mailto:Someone@Example.COM\n",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout(&out),
        [
            "com,example)/a",
            "dns:archive.org",
            "filedesc:IA-FOO.arc.gz",
            "warcinfo:/foo.warc.gz/1.0",
            "net,arin,whois)/1.2.3.4",
            "mailto:someone@example.com",
        ]
    );
    assert!(!stderr(&out).contains("skipped"), "{}", stderr(&out));
}

/// Every key the `surt` package computed for the canon crate's conformance data, through the
/// command: the distinct keys in order of first appearance.
#[test]
fn surt_keys_match_the_package_data() {
    let data = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../canon/tests/data/surt-package.tsv"
    ))
    .unwrap();
    let (mut input, mut want, mut seen) = (String::new(), Vec::new(), HashSet::new());
    for row in data.lines().filter(|l| !l.starts_with('#')) {
        let (url, key) = row.split_once('\t').unwrap();
        // Rows with escapes (tabs, line breaks) or that the package fails on are covered by
        // the canon crate's test; an input line has none.
        if url.contains('\\') || key.contains('\\') || key == "!error" || url.trim() != url {
            continue;
        }
        input.push_str(url);
        input.push('\n');
        if seen.insert(key.to_owned()) {
            want.push(key.to_owned());
        }
    }
    assert!(want.len() > 500, "{} keys", want.len());
    let out = run(&["--surt"], input);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), want);
}

/// Flags that cannot work together are usage errors (exit 2) saying why, never silently
/// ignored.
#[test]
fn flags_that_cannot_combine_are_usage_errors() {
    for (args, says) in [
        (&["--surt", "--policy", "w3lib"][..], "--policy w3lib"),
        (&["--surt", "--fold-www"], "--fold-www"),
        (&["--surt", "--canonical"], "--canonical"),
        (&["--raw", "--fold-www", "--lowercase-path"], "--fold-www"),
        (&["--raw", "--keep-tracking"], "--keep-tracking"),
        (&["--raw", "--strip-param", "ref"], "--strip-param"),
        (&["--raw", "--trailing-slash", "keep"], "--trailing-slash"),
        (&["--raw", "--policy", "w3lib"], "--policy"),
        (&["--raw", "--surt"], "--surt"),
        (&["--policy", "w3lib", "--keep-fragment"], "--keep-fragment"),
    ] {
        let out = run(args, "https://a.example/\n");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

/// A usage error once carried a 14-space gap from a broken line continuation.
#[test]
fn usage_errors_read_as_one_sentence() {
    let out = run(&["--policy", "w3lib", "--keep-fragment", "f"], "");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with("url-dedup: error: --policy w3lib reproduces"),
        "{err}"
    );
    assert!(!err.contains("  "), "{err:?}");
}

/// The lines `awk '!seen[$0]++'` prints: every byte up to `\n` is the line.
fn awk_model(input: &[u8]) -> Vec<u8> {
    let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    if input.is_empty() || input.ends_with(b"\n") {
        lines.pop();
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for line in lines {
        if seen.insert(line) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    out
}

/// `--raw` once trimmed white space, stripped `\r`, byte order marks and empty lines, and
/// dropped lines with a NUL or an inner `\r`: `printf 'a\na \n a\n' | url-dedup --raw` printed
/// one line where `awk '!seen[$0]++'` prints three.
#[test]
fn raw_compares_lines_as_awk_does() {
    let out = run(&["--raw"], "a\na \n a\n");
    assert_eq!(out.stdout, b"a\na \n a\n");
    let pieces: [&[u8]; 12] = [
        b"a",
        b"b",
        b" ",
        b"\t",
        b"\r",
        b"\n",
        b"\n",
        b"\0",
        b"\xef\xbb\xbf",
        b"\xff",
        b"\xc3\xa9",
        b"https://A.example/",
    ];
    let mut state = 12_345u64;
    for round in 0..30 {
        let mut input = Vec::new();
        for _ in 0..400 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            input.extend_from_slice(pieces[(state >> 33) as usize % pieces.len()]);
        }
        let out = run(&["--raw"], input.clone());
        assert!(out.status.success(), "{out:?}");
        assert_eq!(out.stdout, awk_model(&input), "round {round}: {input:?}");
    }
}

/// `--explain` rows once named neither the line's place nor the earlier line it was folded
/// into, and wrote a tab inside a URL raw, which split its row.
#[test]
fn explain_rows_name_both_lines_and_stay_one_row() {
    let dir = tempfile::tempdir().unwrap();
    let why = dir.path().join("e.tsv");
    let out = url_dedup()
        .arg(format!("--explain={}", why.display()))
        .write_stdin("http://a.example/x\nhttp://a.example/\tx\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(&why).unwrap(),
        "duplicate\t<stdin>:2\thttp://a.example/\\tx\t<stdin>:1\tsame canonical form\n"
    );
    let out = run(
        &["--similar", "--explain"],
        "https://shop.example/list?sort=price\nhttps://b.example/\n\
         https://shop.example/list?sort=name\n/relative\x01\n",
    );
    let rows: Vec<Vec<String>> = stderr(&out)
        .lines()
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect();
    assert_eq!(rows.len(), 2, "{}", stderr(&out));
    assert_eq!(
        rows[0][..4],
        [
            "similar",
            "<stdin>:3",
            "https://shop.example/list?sort=name",
            "<stdin>:1"
        ]
    );
    assert_eq!(
        rows[1][..4],
        ["invalid", "<stdin>:4", "/relative\\x01", "-"]
    );
    assert!(rows.iter().all(|r| r.len() == 5), "{rows:?}");
}

/// `--similar` folded two news topics told apart by a word-valued `Theme=` into one page.
#[test]
fn similar_keeps_pages_named_by_a_word_value() {
    let out = run(
        &["--similar"],
        "http://www.newsnow.co.uk/NewsLink.htm?Theme=Electronic+Commerce\n\
         http://www.newsnow.co.uk/NewsLink.htm?Theme=Windows+NT\n",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out).len(), 2, "{}", stderr(&out));
}

/// Safe Browsing's rules read bytes (its published examples hold a raw 0x80 octet), but lines
/// that were not UTF-8 were refused under `--policy safe-browsing`; and its canonical form
/// could carry a raw control byte.
#[test]
fn safe_browsing_reads_any_bytes_and_escapes_them() {
    let out = run(
        &["--policy", "safe-browsing", "--canonical"],
        &b"http://ex.com/caf\xe9\nhttp://ex.com/caf%E9\nhttp://\x01\xc2\x80.com/\n"[..],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout(&out),
        ["http://ex.com/caf%E9", "http://xn--%01-ba.com/"]
    );
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    // The other conventions still refuse text in another encoding.
    let out = run(&["--canonical"], &b"http://ex.com/caf\xe9\n"[..]);
    assert!(stdout(&out).is_empty());
    assert!(stderr(&out).contains("not valid UTF-8"), "{}", stderr(&out));
}

/// w3lib accepts IPv6 hosts with a zone; the w3lib convention rejected them.
#[test]
fn w3lib_takes_ipv6_zones() {
    let out = run(
        &["--policy", "w3lib", "--canonical"],
        "http://[fe80::1%25eth0]/p\n",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), ["http://[fe80::1%25eth0]/p"]);
}

/// `--redis-acknowledge N` makes each batch wait for N replicas (Redis `WAIT`): on a cluster
/// whose masters have a replica the run goes through; on a server without one it stops with
/// an error saying that no replica acknowledged, instead of printing URLs a failover could
/// lose.
#[test]
fn redis_acknowledge_waits_for_replicas() {
    let Some(cluster) =
        url_dedup_redis::testing::RedisCluster::start_or_skip("cli --redis-acknowledge", 3, 1)
    else {
        return;
    };
    let input = "https://a.example/1\nhttps://a.example/2\nhttps://a.example/1\n";
    let out = url_dedup()
        .args(["--redis", &cluster.url(), "--redis-acknowledge", "1"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "https://a.example/1\nhttps://a.example/2\n"
    );

    let Some(alone) = url_dedup_redis::testing::RedisServer::start_or_skip("no replica") else {
        return;
    };
    let out = url_dedup()
        .args(["--redis", &alone.url(), "--redis-acknowledge", "1"])
        .args(["--redis-timeout", "1"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("0 of 1 replicas"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "nothing printed that a failover could lose"
    );
}
