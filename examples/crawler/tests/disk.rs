//! Safe on disk: crawl state is private, the crawler never writes through a link it did not
//! make, and damaged or missing state is never silent.

mod common;

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use common::{Reply, Site, crawl, crawl_ending, crawler, temp_out, warc_responses};

/// A small site: `/` links to ten pages.
fn site() -> Site {
    Site::start(|target, _| match target {
        "/" => Reply::html(
            (0..10)
                .map(|i| format!("<a href=\"/p{i}\">{i}</a>"))
                .collect::<String>(),
        ),
        t if t.starts_with("/p") => Reply::html("leaf"),
        _ => Reply::not_found(),
    })
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The checkpoint holds the done set's hash key (its tail loads as a `url-dedup --state`
/// file): it, the journal and the run queue are readable by their owner only, whatever the
/// umask. It was written 0644.
#[test]
fn crawl_state_is_readable_by_its_owner_only() {
    let site = site();
    let (_tmp, out) = temp_out();
    crawl(&out, &site.url("/"), &["--ignore-robots"]);
    assert_eq!(mode(&out.join("checkpoint")), 0o600);
    let state: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("journal-") || name.starts_with("queue-")
        })
        .collect();
    assert!(!state.is_empty());
    for p in state {
        assert_eq!(mode(&p), 0o600, "{}", p.display());
    }
}

/// Links planted in the output directory before a resume (the WARC file, a mirror directory)
/// stop the crawl with an error naming them; nothing is written where they point. A resume
/// once appended 18 MB to a WARC file linked elsewhere and wrote 100 pages outside `--out`.
#[test]
fn links_planted_in_the_output_directory_are_never_written_through() {
    let site = site();
    let host = site.origin.trim_start_matches("http://").replace(':', "+");
    for planted in ["crawl.warc", "mirror", "skipped.tsv"] {
        let (_tmp, out) = temp_out();
        crawl(
            &out,
            &site.url("/"),
            &["--ignore-robots", "--max-pages", "2"],
        );
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("target");
        let link = out.join(planted);
        if planted == "mirror" {
            std::fs::remove_dir_all(&link).unwrap();
            std::fs::create_dir(&target).unwrap();
        } else {
            std::fs::rename(&link, &target).unwrap();
        }
        symlink(&target, &link).unwrap();
        let before = std::fs::read_dir(elsewhere.path()).unwrap().count();
        let size = std::fs::metadata(&target).unwrap().len();
        let output = crawler(&out)
            .args([site.url("/").as_str(), "--ignore-robots"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{planted}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("is a symbolic link"), "{planted}: {stderr}");
        assert!(stderr.contains(planted), "{planted}: {stderr}");
        assert_eq!(std::fs::metadata(&target).unwrap().len(), size, "{planted}");
        assert!(
            !target.join(&host).exists(),
            "{planted}: a page was written through"
        );
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), before);
    }
}

/// A crawl whose checkpoint was deleted is not taken for a new one: without `--restart` the
/// run refuses (a new crawl once truncated the existing `crawl.warc`, 561 records gone);
/// with it, the earlier files are moved to `previous-<time>/` and a new crawl starts.
#[test]
fn a_missing_checkpoint_is_refused_until_restart_moves_the_crawl_aside() {
    let site = site();
    let (_tmp, out) = temp_out();
    crawl(&out, &site.url("/"), &["--ignore-robots"]);
    let records = warc_responses(&out).len();
    std::fs::remove_file(out.join("checkpoint")).unwrap();
    let refused = crawl_ending(&out, &site.url("/"), &["--ignore-robots"], 1);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("not its checkpoint") && stderr.contains("--restart"),
        "{stderr}"
    );
    assert_eq!(
        warc_responses(&out).len(),
        records,
        "the WARC file is untouched"
    );

    crawl(&out, &site.url("/"), &["--ignore-robots", "--restart"]);
    let aside = common::files_starting(&out, "previous-");
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(aside[0].join("crawl.warc").exists());
    assert_eq!(
        warc_responses(&out).len(),
        records,
        "the new crawl fetched every page"
    );
}

/// A WARC file cut or deleted behind the crawl's back stops the resume (it once went on and
/// the archive silently lacked the earlier records).
#[test]
fn a_cut_or_missing_warc_file_stops_the_resume() {
    let site = site();
    for damage in ["cut", "deleted"] {
        let (_tmp, out) = temp_out();
        crawl(
            &out,
            &site.url("/"),
            &["--ignore-robots", "--max-pages", "4"],
        );
        let warc = out.join("crawl.warc");
        match damage {
            "cut" => {
                let len = std::fs::metadata(&warc).unwrap().len();
                let file = std::fs::OpenOptions::new().write(true).open(&warc).unwrap();
                file.set_len(len / 2).unwrap();
            }
            _ => std::fs::remove_file(&warc).unwrap(),
        }
        let output = crawl_ending(&out, &site.url("/"), &["--ignore-robots"], 1);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("was cut or replaced"), "{damage}: {stderr}");
        assert!(stderr.contains("--restart"), "{damage}: {stderr}");
    }
}

/// A journal deleted after a checkpoint is reported: what happened since that checkpoint is
/// forgotten and fetched again, and the run says so (29 of 57 pages were once fetched again
/// without a word).
#[test]
fn a_missing_journal_is_reported() {
    let site = site();
    let (_tmp, out) = temp_out();
    crawl(
        &out,
        &site.url("/"),
        &["--ignore-robots", "--max-pages", "3"],
    );
    let journals: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("journal-")
        })
        .collect();
    assert_eq!(journals.len(), 1);
    // The state of a crawl killed some pages after its last checkpoint (records written to
    // the WARC file past the checkpoint's length), whose journal then went missing.
    std::fs::remove_file(&journals[0]).unwrap();
    let warc = out.join("crawl.warc");
    let mut extra = std::fs::OpenOptions::new()
        .append(true)
        .open(&warc)
        .unwrap();
    std::io::Write::write_all(&mut extra, b"WARC/1.1\r\n\r\n").unwrap();
    let output = crawl(&out, &site.url("/"), &["--ignore-robots"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stderr.contains("journal after the last checkpoint is missing"),
        "{stderr}"
    );
    assert!(stdout.contains("WARNING"), "{stdout}");
}
