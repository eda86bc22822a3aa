//! `url-dedup learn`: rules from a crawl's WARC files or CDX index.

mod cdx;
mod warc;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;
use std::time::Instant;

use url_dedup::canon::Canonicalizer;
use url_dedup::rules::{LearnOptions, Learner, Status};
use url_dedup_fingerprint::Fingerprinter;
use xxhash_rust::xxh3::xxh3_128;

use crate::Failure;
use crate::args::{InputFormat, LearnArgs};

/// What the inputs held.
#[derive(Debug, Default)]
struct Counts {
    records: u64,
    used: u64,
    html: u64,
    not_2xx: u64,
    invalid_url: u64,
}

/// What learning is fed: canonical URLs and their contents.
struct Feed {
    canon: Canonicalizer,
    fingerprints: Fingerprinter,
    learner: Learner,
    counts: Counts,
    /// Payload digests of HTML responses, mapped to the fingerprint they were given, so a
    /// revisit record of one of them counts as the same page.
    by_payload: std::collections::HashMap<String, (u128, Option<u64>)>,
}

impl Feed {
    fn add(&mut self, url: &str, digest: u128, simhash: Option<u64>) {
        let Ok(canonical) = self.canon.canonicalize(url) else {
            self.counts.invalid_url += 1;
            return;
        };
        match self.learner.add(&canonical, digest, simhash) {
            Ok(()) => self.counts.used += 1,
            Err(_) => self.counts.invalid_url += 1,
        }
    }

    fn warc(&mut self, input: impl BufRead, name: &str) -> Result<(), String> {
        let mut reader = warc::WarcReader::new(input);
        while let Some(record) = reader.next_record().map_err(|e| format!("{name}: {e}"))? {
            self.counts.records += 1;
            let Some(url) = record.url.as_deref() else {
                continue;
            };
            match record.kind.as_str() {
                "response" => {
                    let Some(block) = &record.block else {
                        if let Some(d) = &record.payload_digest {
                            self.add(url, xxh3_128(d.as_bytes()), None);
                        }
                        continue;
                    };
                    let Some(response) = warc::http_response(block) else {
                        continue;
                    };
                    if !(200..300).contains(&response.status) {
                        self.counts.not_2xx += 1;
                        continue;
                    }
                    let html = response
                        .header("content-type")
                        .is_some_and(|t| t.to_ascii_lowercase().contains("html"));
                    let fingerprint = if html { response.decoded_body() } else { None }
                        .map(|body| self.fingerprints.fingerprint(&body));
                    let content = match fingerprint {
                        Some(f) => {
                            self.counts.html += 1;
                            (f.exact.0, (!f.is_empty()).then_some(f.simhash.0))
                        }
                        None => (
                            record.payload_digest.as_deref().map_or_else(
                                || xxh3_128(response.body),
                                |d| xxh3_128(d.as_bytes()),
                            ),
                            None,
                        ),
                    };
                    if let Some(d) = &record.payload_digest {
                        self.by_payload.insert(d.clone(), content);
                    }
                    self.add(url, content.0, content.1);
                }
                "revisit" => {
                    // The same payload as an earlier response: that response's page.
                    if let Some(d) = &record.payload_digest {
                        let content = self
                            .by_payload
                            .get(d)
                            .copied()
                            .unwrap_or((xxh3_128(d.as_bytes()), None));
                        self.add(url, content.0, content.1);
                    }
                }
                "resource" => {
                    if let Some(block) = &record.block {
                        self.add(url, xxh3_128(block), None);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn cdx(&mut self, input: impl BufRead, name: &str) -> Result<(), String> {
        let mut columns = cdx::Columns::default();
        for (i, line) in input.lines().enumerate() {
            let line = line.map_err(|e| format!("{name}: {e}"))?;
            if i == 0 && line.starts_with(" CDX") {
                columns = cdx::Columns::from_legend(&line).map_err(|e| format!("{name}:1: {e}"))?;
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            self.counts.records += 1;
            let c = columns
                .capture(&line)
                .map_err(|e| format!("{name}:{}: {e}", i + 1))?;
            if !(c.status.starts_with('2') || c.status == "-") || c.digest == "-" {
                self.counts.not_2xx += 1;
                continue;
            }
            self.add(c.url, xxh3_128(c.digest.as_bytes()), None);
        }
        Ok(())
    }
}

/// Opens `path`, ungzipping it when it starts with the gzip magic; returns the reader and
/// whether its first bytes say WARC.
fn open(path: &Path) -> Result<(Box<dyn BufRead>, bool), String> {
    let file = File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut raw = BufReader::with_capacity(1 << 16, file);
    let gzip = raw
        .fill_buf()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .starts_with(&[0x1f, 0x8b]);
    let mut input: Box<dyn BufRead> = if gzip {
        Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::read::MultiGzDecoder::new(raw),
        ))
    } else {
        Box::new(raw)
    };
    let warc = input
        .fill_buf()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .starts_with(b"WARC/");
    Ok((input, warc))
}

/// Runs `url-dedup learn`.
pub(crate) fn run(args: LearnArgs) -> Result<(), Failure> {
    let started = Instant::now();
    let options = LearnOptions::default()
        .with_min_pages(args.min_pages)
        .with_min_urls(args.min_urls)
        .with_max_distance(args.max_distance)
        .with_status(if args.confirmed {
            Status::Confirmed
        } else {
            Status::Candidate
        });
    let mut feed = Feed {
        canon: Canonicalizer::new(args.policy.unwrap_or_default().policy()),
        fingerprints: Fingerprinter::new(),
        learner: Learner::new(options),
        counts: Counts::default(),
        by_payload: Default::default(),
    };
    for path in &args.files {
        let name = path.display().to_string();
        let (input, looks_warc) = open(path).map_err(Failure::Run)?;
        let warc = match args.format {
            InputFormat::Warc => true,
            InputFormat::Cdx => false,
            InputFormat::Auto => looks_warc,
        };
        if warc {
            feed.warc(input, &name)
        } else {
            feed.cdx(input, &name)
        }
        .map_err(Failure::Run)?;
    }
    let read = started.elapsed();
    let learning = Instant::now();
    let learned = feed.learner.learn();
    let learned_in = learning.elapsed();
    let text = learned.rules.to_string();
    match &args.output {
        Some(path) => {
            crate::private_file::replace(path, |out| out.write_all(text.as_bytes()))
                .map_err(|e| Failure::Run(format!("cannot write {}: {e}", path.display())))?;
        }
        None => {
            let mut out = io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
                Err(e) => return Err(Failure::Run(format!("cannot write the rules: {e}"))),
            }
        }
    }
    let (c, r) = (&feed.counts, &learned.report);
    eprintln!(
        "url-dedup learn: {} records, {} URLs used ({} HTML pages fingerprinted, {} not 2xx, {} not valid URLs)",
        c.records, c.used, c.html, c.not_2xx, c.invalid_url
    );
    eprintln!(
        "url-dedup learn: {} distinct URLs of {} hosts: {} pages, {} duplicate URLs, {} URLs whose page changed between fetches",
        r.urls, r.hosts, r.pages, r.duplicate_urls, r.unstable_urls
    );
    eprintln!(
        "url-dedup learn: {} rules kept of {} candidates; {} rejected for folding different pages; read in {:.2} s, learned in {:.2} s",
        r.rules,
        r.candidates,
        r.rejected.len(),
        read.as_secs_f64(),
        learned_in.as_secs_f64()
    );
    Ok(())
}

/// Reads a rules file for `--rules`.
pub(crate) fn load_rules(path: &Path) -> Result<url_dedup::rules::Rules, Failure> {
    let mut text = String::new();
    File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| Failure::Run(format!("cannot read the rules {}: {e}", path.display())))?;
    let set = url_dedup::rules::RuleSet::parse(&text)
        .map_err(|e| Failure::Run(format!("{}:{}: {}", path.display(), e.line, e.message)))?;
    Ok(url_dedup::rules::Rules::new(&set))
}
