//! A state written under other options, said in the command's own words: which options the
//! state was written with and which this run gives (`state: --fold-www; this run: no
//! --fold-www`), rather than the library's record of its configuration.
//!
//! The library records a configuration as `name: value` lines (`canonicalization`,
//! `similarity`, `filter`), the canonicalization as the policy's fields; each field that
//! differs is named by the option that sets it.

/// The differences between the configuration a state `recorded` and the one this run
/// `configured`, one indented line each.
pub(crate) fn describe(recorded: &str, configured: &str) -> String {
    let mut out = String::new();
    for name in ["canonicalization", "similarity", "filter"] {
        let (was, now) = (value(recorded, name), value(configured, name));
        if was == now {
            continue;
        }
        let differences = match name {
            "canonicalization" => canonicalization(was, now),
            "similarity" => vec![(similarity(was), similarity(now))],
            _ => vec![(filter(was), filter(now))],
        };
        for (was, now) in differences {
            out.push_str(&format!("  state: {was}; this run: {now}\n"));
        }
    }
    if out.is_empty() {
        // Never an empty list: the records differ in a way not named above.
        out.push_str(&format!(
            "  state:\n{}  this run:\n{}",
            indented(recorded),
            indented(configured)
        ));
    }
    out
}

fn indented(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// The value of the line `name: value` in a recorded configuration.
fn value<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
}

fn similarity(value: Option<&str>) -> String {
    match value {
        Some("off") => "no --similar".to_owned(),
        Some("Page") => "--similar".to_owned(),
        Some("Crawler") => "--similar=crawler".to_owned(),
        Some("Document004") => "--similar=document004".to_owned(),
        Some(other) => format!("similarity {other}"),
        None => NOT_RECORDED.to_owned(),
    }
}

fn filter(value: Option<&str>) -> String {
    match value {
        Some("Exact") => "--exact".to_owned(),
        Some(_) => "no --exact".to_owned(),
        None => NOT_RECORDED.to_owned(),
    }
}

const NOT_RECORDED: &str = "options not recorded (written by an older version)";

/// The canonicalization options that differ, as pairs of how each side says them.
fn canonicalization(was: Option<&str>, now: Option<&str>) -> Vec<(String, String)> {
    let (Some(was_fields), Some(now_fields)) = (was.and_then(fields), now.and_then(fields)) else {
        let say = |v: Option<&str>| match v {
            None => NOT_RECORDED.to_owned(),
            Some(v) if v.starts_with("none") => "--raw".to_owned(),
            Some(_) => "no --raw".to_owned(),
        };
        return vec![(say(was), say(now))];
    };
    let mut differences = Vec::new();
    for (name, old) in &was_fields {
        let new = now_fields
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str());
        if old == new {
            continue;
        }
        if old.starts_with("ParamList") {
            differences.extend(lists(name, old, new));
        } else {
            differences.push((option(name, old), option(name, new)));
        }
    }
    differences
}

/// The names one recorded parameter list has and the other lacks. A list emptied by
/// `--keep-tracking` or `--keep-session` is said by that switch alone.
fn lists(name: &str, was: &str, now: &str) -> Vec<(String, String)> {
    let (was, now) = (names(was), names(now));
    if was.is_empty() || now.is_empty() {
        return Vec::new();
    }
    let flag = match name {
        "tracking_params" => "--strip-param",
        _ => "session parameter",
    };
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter().filter(|n| !b.contains(n)).cloned().collect()
    };
    let mut pairs = Vec::new();
    let added = only(&now, &was);
    if !added.is_empty() {
        let added = added.join(", ");
        pairs.push((format!("no {flag} {added}"), format!("{flag} {added}")));
    }
    let dropped = only(&was, &now);
    if !dropped.is_empty() {
        let dropped = dropped.join(", ");
        pairs.push((format!("{flag} {dropped}"), format!("no {flag} {dropped}")));
    }
    pairs
}

/// The fields of a recorded policy, `Policy { name: value, ... }`, split at its top level.
fn fields(policy: &str) -> Option<Vec<(String, String)>> {
    let inner = policy.strip_prefix("Policy { ")?.strip_suffix(" }")?;
    let (mut fields, mut depth, mut start) = (Vec::new(), 0i32, 0);
    let mut quoted = false;
    let bytes = inner.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b'[' | b'{' | b'(' if !quoted => depth += 1,
            b']' | b'}' | b')' if !quoted => depth -= 1,
            b',' if !quoted && depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                fields.push(&inner[start..i]);
                start = i + 2;
            }
            _ => {}
        }
    }
    fields.push(&inner[start..]);
    fields
        .into_iter()
        .map(|f| {
            let (name, value) = f.split_once(": ")?;
            Some((name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// How the command line sets a policy field to `value`.
fn option(name: &str, value: &str) -> String {
    let switch = |on: &str, flag: &str| match value == on {
        true => flag.to_owned(),
        false => format!("no {flag}"),
    };
    match name {
        "rules" => match value {
            "Whatwg" => "--policy crawler or rfc3986".to_owned(),
            "W3lib" => "--policy w3lib".to_owned(),
            "SafeBrowsing" => "--policy safe-browsing".to_owned(),
            "InternetArchive" => "--policy ia".to_owned(),
            "Surt" => "--policy surt (or --surt)".to_owned(),
            other => format!("rules {other}"),
        },
        "remove_fragment" => switch("false", "--keep-fragment"),
        "sort_query" => switch("false", "--keep-query-order"),
        "drop_empty_query" => switch("false", "--keep-empty-query"),
        "remove_tracking_params" => switch("false", "--keep-tracking"),
        "remove_session_params" => switch("false", "--keep-session"),
        "fold_www" => switch("true", "--fold-www"),
        "fold_scheme" => switch("true", "--fold-scheme"),
        "lowercase_path" => switch("true", "--lowercase-path"),
        "trailing_slash" => match value {
            "Keep" => "--trailing-slash keep".to_owned(),
            "Remove" => "--trailing-slash remove".to_owned(),
            "AddToDirectories" => "--trailing-slash add".to_owned(),
            other => format!("trailing slash {other}"),
        },
        "max_len" => format!("--max-len {value}"),
        other => format!("{} {value}", other.replace('_', " ")),
    }
}

/// The parameter names of a recorded list (`ParamList { exact: ["gclid"], prefixes:
/// ["utm_"], .. }`): `gclid`, `utm_*`.
fn names(list: &str) -> Vec<String> {
    let section = |key: &str| -> Vec<String> {
        let Some(start) = list.find(&format!("{key}: [")) else {
            return Vec::new();
        };
        let rest = &list[start + key.len() + 3..];
        let end = rest.find(']').unwrap_or(rest.len());
        rest[..end]
            .split(", ")
            .filter_map(|q| q.strip_prefix('"')?.strip_suffix('"'))
            .map(str::to_owned)
            .collect()
    };
    let mut all = section("exact");
    all.extend(section("prefixes").into_iter().map(|p| format!("{p}*")));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(policy: &url_dedup::canon::Policy, similarity: &str, filter: &str) -> String {
        format!("canonicalization: {policy:?}\nsimilarity: {similarity}\nfilter: {filter}\n")
    }

    /// The library's record printed Rust's `Debug` cut at commas (`recorded rules: Whatwg };
    /// this run rules: W3lib }`); the command names its options.
    #[test]
    fn differences_are_said_as_options() {
        use url_dedup::canon::{Convention, Policy};
        let crawler = Policy::default();
        let mut switched = Policy::default();
        switched.fold_www = true;
        switched.remove_fragment = false;
        switched.tracking_params.push("ref");
        let said = describe(
            &recorded(&crawler, "off", "Growing"),
            &recorded(&switched, "Crawler", "Exact"),
        );
        assert_eq!(
            said,
            "  state: no --keep-fragment; this run: --keep-fragment\n\
             \x20 state: no --strip-param ref; this run: --strip-param ref\n\
             \x20 state: no --fold-www; this run: --fold-www\n\
             \x20 state: no --similar; this run: --similar=crawler\n\
             \x20 state: no --exact; this run: --exact\n"
        );
        let said = describe(
            &recorded(&crawler, "off", "Growing"),
            &recorded(&Convention::W3lib.policy(), "off", "Growing"),
        );
        assert!(
            said.contains("state: --policy crawler or rfc3986; this run: --policy w3lib"),
            "{said}"
        );
        for text in said.lines() {
            assert!(!text.contains(['{', '}']), "{text}");
        }
        let mut kept = Policy::default();
        kept.remove_tracking_params = false;
        kept.tracking_params = url_dedup::canon::ParamList::new(Vec::<String>::new());
        assert_eq!(
            describe(
                &recorded(&crawler, "off", "Growing"),
                &recorded(&kept, "off", "Growing")
            ),
            "  state: no --keep-tracking; this run: --keep-tracking\n"
        );
        let raw = "canonicalization: none (byte for byte)\nsimilarity: off\nfilter: Growing\n";
        assert_eq!(
            describe(raw, &recorded(&crawler, "off", "Growing")),
            "  state: --raw; this run: no --raw\n"
        );
    }
}
