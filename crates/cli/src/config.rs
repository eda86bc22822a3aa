//! What the options ask of the deduplicator: the canonicalization policy, the filter's size
//! and kind, and the combinations of options that cannot work together.

use std::time::Duration;

use url_dedup::canon::{Convention, Policy, TrailingSlash};
use url_dedup::similarity::Preset;
use url_dedup::{FilterKind, UrlDedup};

use crate::Failure;
use crate::args::{Args, SimilarPreset, SlashPolicy};

/// The canonicalization convention of a run: `--surt` is the `surt` convention, whose
/// canonical form is the SURT key; otherwise `--policy`, by default `crawler`.
pub(crate) fn convention(args: &Args) -> Convention {
    match (args.surt, args.policy) {
        (true, _) => Convention::Surt,
        (false, policy) => policy.unwrap_or_default(),
    }
}

/// Refuses options that cannot work together, with what to do instead.
///
/// * `--surt` is the `surt` package's key: the surt convention's canonical form, printed. Any
///   other `--policy` would print the SURT of another canonical form, which is not that key
///   and folds other URLs (`www.example.com/a` and `example.com/a/` have one key).
/// * The named conventions reproduce other projects exactly: a canonicalization switch would
///   make them something else.
pub(crate) fn check_combinations(args: &Args) -> Result<(), Failure> {
    if let (true, Some(policy)) = (args.surt, args.policy)
        && policy != Convention::Surt
    {
        return Err(Failure::Usage(format!(
            "--surt prints the key of the surt package, the canonical form of --policy surt; \
             it cannot be combined with --policy {policy} (use --policy {policy} --canonical \
             for that convention's form)"
        )));
    }
    let convention = convention(args);
    if matches!(convention, Convention::Crawler | Convention::Rfc3986) {
        return Ok(());
    }
    if let Some(switch) = switches(args).first() {
        let named = if args.surt {
            "--surt".to_owned()
        } else {
            format!("--policy {convention}")
        };
        return Err(Failure::Usage(format!(
            "{named} reproduces that project's rules exactly and takes no canonicalization \
             switch such as {switch}"
        )));
    }
    Ok(())
}

/// The canonicalization switches given on the command line, as they are spelled there.
fn switches(args: &Args) -> Vec<&'static str> {
    [
        (args.keep_fragment, "--keep-fragment"),
        (args.keep_query_order, "--keep-query-order"),
        (args.keep_empty_query, "--keep-empty-query"),
        (args.keep_tracking, "--keep-tracking"),
        (args.keep_session, "--keep-session"),
        (!args.strip_params.is_empty(), "--strip-param"),
        (args.fold_www, "--fold-www"),
        (args.fold_scheme, "--fold-scheme"),
        (args.lowercase_path, "--lowercase-path"),
        (args.trailing_slash != SlashPolicy::Keep, "--trailing-slash"),
    ]
    .into_iter()
    .filter_map(|(given, name)| given.then_some(name))
    .collect()
}

/// The first layer's size when `-n` is not given: a quarter of the lines, so a list with the
/// usual share of repeats fits in one or two layers, within bounds. Too small costs a layer
/// or two (and a cache miss each for a new URL), too large costs memory for nothing (a filter
/// sized for all the lines of a list that repeats itself ten times is ten times too big); the
/// filter grows either way without losing its rate, to at most about twice what it holds.
///
/// A `shared` filter (`--redis`) holds every line, and at least as many as a pipe's: other
/// processes add their own URLs, and a key that grows costs Redis about twice the CPU per URL
/// (its URLs go through a script), while a URL it is sized for costs about 20 bytes of Redis
/// memory at the shared default rate.
pub(crate) fn first_layer(lines: Option<u64>, shared: bool) -> u64 {
    match (lines, shared) {
        (None, _) => FIRST_LAYER_PIPE,
        (Some(n), false) => (n / 4).clamp(FIRST_LAYER_MIN, FIRST_LAYER_MAX),
        (Some(n), true) => n.clamp(FIRST_LAYER_PIPE, FIRST_LAYER_MAX),
    }
}

/// The bounds of the first layer `-n` defaults to (`--help` states them).
const FIRST_LAYER_MIN: u64 = 65_536;
const FIRST_LAYER_MAX: u64 = 4_000_000;
/// The first layer for an input of unknown size.
const FIRST_LAYER_PIPE: u64 = 1_000_000;

/// The deduplicator the options describe, for an input of about `lines` lines.
pub(crate) fn builder(args: &Args, lines: Option<u64>) -> url_dedup::Builder {
    let expected = args
        .expected
        .unwrap_or_else(|| first_layer(lines, args.redis.is_some()));
    let mut b = UrlDedup::builder()
        .expected_urls(expected)
        .false_positive_rate(args.fpr());
    if args.exact {
        b = b.filter(FilterKind::Exact);
    }
    b = if args.raw {
        b.no_canonicalization()
    } else {
        b.canonicalization(policy(args))
    };
    if let Some(url) = &args.redis {
        let timeout = Duration::from_secs_f64(args.redis_timeout);
        b = b
            .redis(url, &args.redis_prefix)
            .redis_backoff(url_dedup::redis::Backoff::giving_up_after(timeout));
        if let Some(replicas) = args.redis_acknowledge {
            // A replica that does not answer within the retry budget makes the batch fail,
            // as an unreachable Redis does.
            b = b.redis_acknowledge(url_dedup::redis::Acknowledge { replicas, timeout });
        }
    }
    if let Some(preset) = preset(args) {
        b = b.similarity(preset);
    }
    if let Some(rate) = args.similar_fpr {
        b = b.similarity_false_positive_rate(rate);
    }
    if args.force_state {
        b = b.accept_config_change();
    }
    b
}

/// The similarity preset of `--similar`, if given.
pub(crate) fn preset(args: &Args) -> Option<Preset> {
    args.similar.map(|preset| match preset {
        SimilarPreset::Crawler => Preset::Crawler,
        SimilarPreset::Page => Preset::Page,
        SimilarPreset::Document004 => Preset::Document004,
    })
}

/// The convention's policy with the switches given on the command line; a switch not given
/// leaves the convention's own rule alone (RFC 3986 keeps tracking parameters, say).
fn policy(args: &Args) -> Policy {
    let mut p = convention(args).policy();
    p.max_len = args.max_len;
    if args.keep_fragment {
        p.remove_fragment = false;
    }
    if args.keep_query_order {
        p.sort_query = false;
    }
    if args.keep_empty_query {
        p.drop_empty_query = false;
    }
    if args.keep_tracking {
        p.tracking_params = url_dedup::canon::ParamList::new(Vec::<String>::new());
    }
    if !args.strip_params.is_empty() {
        p.remove_tracking_params = true;
        for name in &args.strip_params {
            p.tracking_params.push(name);
        }
    } else if args.keep_tracking {
        p.remove_tracking_params = false;
    }
    if args.keep_session {
        p.remove_session_params = false;
    }
    p.fold_www |= args.fold_www;
    p.fold_scheme |= args.fold_scheme;
    p.lowercase_path |= args.lowercase_path;
    match args.trailing_slash {
        SlashPolicy::Keep => {}
        SlashPolicy::Remove => p.trailing_slash = TrailingSlash::Remove,
        SlashPolicy::Add => p.trailing_slash = TrailingSlash::AddToDirectories,
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--help` once said the first layer starts at 16 thousand where the code used 65,536.
    #[test]
    fn help_states_the_first_layers_bounds() {
        use clap::CommandFactory;
        let thousands = |n: u64| {
            let digits = n.to_string();
            let mut out = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i).is_multiple_of(3) {
                    out.push(',');
                }
                out.push(c);
            }
            out
        };
        let help = Args::command()
            .render_long_help()
            .to_string()
            .replace('\n', " ");
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for bound in [
            format!(
                "between {} and {};",
                thousands(FIRST_LAYER_MIN),
                thousands(FIRST_LAYER_MAX)
            ),
            format!("{} for a pipe", thousands(FIRST_LAYER_PIPE)),
        ] {
            assert!(help.contains(&bound), "--help does not say {bound:?}");
        }
    }

    #[test]
    fn the_first_layer_follows_the_input_within_bounds() {
        assert_eq!(first_layer(None, false), 1_000_000);
        assert_eq!(first_layer(Some(1_000), false), 65_536);
        assert_eq!(first_layer(Some(8_000_000), false), 2_000_000);
        assert_eq!(first_layer(Some(u64::MAX), false), 4_000_000);
        // Shared: every line of this input, since other processes add theirs.
        assert_eq!(first_layer(None, true), 1_000_000);
        assert_eq!(first_layer(Some(1_000), true), 1_000_000);
        assert_eq!(first_layer(Some(2_000_000), true), 2_000_000);
        assert_eq!(first_layer(Some(u64::MAX), true), 4_000_000);
    }
}
