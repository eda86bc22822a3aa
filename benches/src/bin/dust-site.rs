//! Generated sites for `benches/dust.sh`, and the measure of what the command kept.
//!
//! ```text
//! dust-site site SEED ARTICLES DIR   # DIR/crawl.warc (URLs the even pages link), DIR/urls.txt
//!                                    # (every URL, crawl order), DIR/pages.tsv (URL, page, from)
//! dust-site measure DIR KEPT         # one TSV row: what keeping the lines of KEPT did
//! dust-site rules HOSTS              # 100 rules for each of the first HOSTS hosts of gen-urls
//! ```

use std::collections::HashSet;
use std::io::{BufRead, BufWriter, Write};
use std::path::Path;

use url_dedup_rules::testing::{Site, SiteUrl, evaluate_kept};

/// Whether learning sees `u`: the URLs the even pages link.
fn learned(u: &SiteUrl) -> bool {
    u.from.is_multiple_of(2)
}

fn site(seed: u64, articles: usize, dir: &Path) -> std::io::Result<()> {
    let site = Site::generate(seed, articles);
    let urls = site.crawl_order();
    std::fs::write(
        dir.join("crawl.warc"),
        site.warc(urls.iter().filter(|u| learned(u)).map(|u| u.url.as_str())),
    )?;
    let mut list = BufWriter::new(std::fs::File::create(dir.join("urls.txt"))?);
    let mut pages = BufWriter::new(std::fs::File::create(dir.join("pages.tsv"))?);
    for u in &urls {
        writeln!(list, "{}", u.url)?;
        writeln!(pages, "{}\t{}\t{}", u.url, u.page, u.from)?;
    }
    list.flush()?;
    pages.flush()
}

fn measure(dir: &Path, kept: &Path) -> std::io::Result<()> {
    let kept: HashSet<String> = std::io::BufReader::new(std::fs::File::open(kept)?)
        .lines()
        .collect::<Result<_, _>>()?;
    let text = std::fs::read_to_string(dir.join("pages.tsv"))?;
    let urls: Vec<SiteUrl> = text
        .lines()
        .filter_map(|line| {
            let mut f = line.split('\t');
            Some(SiteUrl {
                url: f.next()?.to_owned(),
                page: f.next()?.parse().ok()?,
                first: false,
                from: f.next()?.parse().ok()?,
            })
        })
        .collect();
    // Columns: over the URLs linked from pages not learned from, then over all URLs.
    let mut row = Vec::new();
    for all in [false, true] {
        let e = evaluate_kept(&urls, |u| kept.contains(u), |u| all || !learned(u));
        row.extend([
            e.urls,
            e.pages,
            e.duplicates,
            e.avoided,
            e.skipped,
            e.skipped_right,
            e.pages_missed,
        ]);
    }
    let row: Vec<String> = row.iter().map(ToString::to_string).collect();
    println!("{}", row.join("\t"));
    Ok(())
}

/// 100 rules for each of `hosts` hosts: 40 parameters, 40 substitutions, 10 default documents,
/// 10 trailing slashes, a few of which match the generated URLs.
fn rules(hosts: usize) -> std::io::Result<()> {
    let mut out = BufWriter::new(std::io::stdout().lock());
    writeln!(out, "rules-format 1")?;
    for h in 0..hosts {
        writeln!(out, "host \"www.site{h}.example.com\"")?;
        writeln!(out, "ignore-param \"ref\" in \"/**\"")?;
        for i in 1..40 {
            writeln!(out, "ignore-param \"p{i}\" in \"/news/*/**\"")?;
        }
        for i in 0..40 {
            writeln!(out, "replace \"/print{i}/\" \"/\"")?;
        }
        for i in 0..10 {
            writeln!(out, "default-document \"index{i}.html\" in \"/**\"")?;
        }
        for i in 0..10 {
            writeln!(out, "trailing-slash remove in \"/section{i}/*\"")?;
        }
    }
    out.flush()
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || {
        std::io::Error::other(
            "usage: dust-site site SEED ARTICLES DIR | measure DIR KEPT | rules HOSTS",
        )
    };
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["site", seed, articles, dir] => site(
            seed.parse().map_err(|_| usage())?,
            articles.parse().map_err(|_| usage())?,
            Path::new(dir),
        ),
        ["measure", dir, kept] => measure(Path::new(dir), Path::new(kept)),
        ["rules", hosts] => rules(hosts.parse().map_err(|_| usage())?),
        _ => Err(usage()),
    }
}
