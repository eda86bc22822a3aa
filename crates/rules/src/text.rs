//! The text form of rules: the file a person reviews and edits.
//!
//! ```text
//! rules-format 1
//! host "www.example.com"
//!
//! ignore-param "sort" in "/list/*"
//!     support pages=12 saved=30 confidence=91%
//!     status candidate checked=0
//!     predicts "https://www.example.com/list/7?sort=price" "https://www.example.com/list/7"
//! replace "/print/" "/"
//! ```
//!
//! Every line is one thing: the format line (first), a `host` line, a rule, or an indented
//! detail of the rule above it (`support`, `status`, `predicts`). Strings are in double
//! quotes, with `\"` and `\\` inside. Lines starting with `#` and blank lines are for
//! reading; writing the set again writes its own. A rule without `status` is confirmed (a
//! person wrote it) and one without `support` has none. Anything else is an error that names
//! its line.

use std::fmt;
use std::str::FromStr;

use crate::{PathPattern, Rule, RuleKind, RuleSet, Status, Support};

/// The version of the text form this crate reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Text that is not a rule set: where and why.
///
/// # Examples
///
/// ```
/// let err = url_dedup_rules::RuleSet::parse("rules-format 1\nreplace \"/print/\" \"/\"\n").unwrap_err();
/// assert_eq!(err.line, 2);
/// assert_eq!(err.to_string(), "line 2: a rule comes after a `host` line that names its host");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// The line, from 1 (0 for text that is not from a file, such as one rule).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

fn err(message: impl Into<String>) -> ParseError {
    ParseError {
        line: 0,
        message: message.into(),
    }
}

/// Writes `s` in double quotes.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// One token of a line: a bare word or a quoted string.
#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
}

fn tokens(line: &str) -> Result<Vec<Token>, ParseError> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c == ' ' || c == '\t' {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    None => return Err(err("a string is not closed (`\"` missing)")),
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(e @ ('"' | '\\')) => s.push(e),
                        _ => return Err(err("in a string, `\\` comes before `\"` or `\\` only")),
                    },
                    Some(c) if c.is_control() => {
                        return Err(err("a string holds a control character"));
                    }
                    Some(c) => s.push(c),
                }
            }
            if chars.peek().is_some_and(|&c| c != ' ' && c != '\t') {
                return Err(err(
                    "a string is followed by a space or the end of the line",
                ));
            }
            out.push(Token::Quoted(s));
        } else if c.is_control() {
            return Err(err("the line holds a control character"));
        } else {
            let mut w = String::new();
            while let Some(&c) = chars.peek() {
                if c == ' ' || c == '\t' {
                    break;
                }
                if c == '"' {
                    return Err(err("a `\"` inside a word"));
                }
                w.push(c);
                chars.next();
            }
            out.push(Token::Word(w));
        }
    }
    Ok(out)
}

fn word<'a>(t: Option<&'a Token>, what: &str) -> Result<&'a str, ParseError> {
    match t {
        Some(Token::Word(w)) => Ok(w),
        Some(Token::Quoted(q)) => Err(err(format!(
            "expected {what}, found the string {}",
            quote(q)
        ))),
        None => Err(err(format!("expected {what} at the end of the line"))),
    }
}

fn string<'a>(t: Option<&'a Token>, what: &str) -> Result<&'a str, ParseError> {
    match t {
        Some(Token::Quoted(q)) => Ok(q),
        Some(Token::Word(w)) => Err(err(format!(
            "expected {what} in double quotes, found `{w}`"
        ))),
        None => Err(err(format!("expected {what} at the end of the line"))),
    }
}

fn end(t: Option<&Token>) -> Result<(), ParseError> {
    match t {
        None => Ok(()),
        Some(Token::Word(w)) => Err(err(format!("unexpected `{w}` at the end of the line"))),
        Some(Token::Quoted(q)) => Err(err(format!(
            "unexpected {} at the end of the line",
            quote(q)
        ))),
    }
}

fn path_in(it: &mut std::slice::Iter<'_, Token>) -> Result<PathPattern, ParseError> {
    if word(it.next(), "`in`")? != "in" {
        return Err(err("expected `in` and a path pattern"));
    }
    string(it.next(), "a path pattern")?
        .parse()
        .map_err(|e: crate::PatternError| err(e.0))
}

fn name(s: &str, what: &str) -> Result<String, ParseError> {
    if s.is_empty() || s.bytes().any(|b| b"&=#?/ ".contains(&b)) {
        return Err(err(format!(
            "{what} {} is empty or holds `&`, `=`, `#`, `?`, `/` or a space",
            quote(s)
        )));
    }
    Ok(s.to_owned())
}

impl FromStr for RuleKind {
    type Err = ParseError;

    /// One rule line: `ignore-param "NAME" in "PATH"`, `replace "FROM" "TO"`,
    /// `default-document "NAME" in "PATH"` or `trailing-slash add|remove in "PATH"`.
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let toks = tokens(line)?;
        let mut it = toks.iter();
        let kind = match word(it.next(), "a rule")? {
            "ignore-param" => {
                let param = string(it.next(), "a parameter name")?;
                let (n, value) = match param.split_once('=') {
                    Some((n, v)) => {
                        if v.bytes().any(|b| b"&#= ".contains(&b)) {
                            return Err(err(format!(
                                "a parameter value holds no `&`, `#`, `=` or space: {}",
                                quote(param)
                            )));
                        }
                        (n, Some(v.to_owned()))
                    }
                    None => (param, None),
                };
                RuleKind::IgnoreParam {
                    name: name(n, "a parameter name")?,
                    value,
                    path: path_in(&mut it)?,
                }
            }
            "replace" => {
                let from = string(it.next(), "what is replaced")?
                    .parse()
                    .map_err(|e: crate::PatternError| err(e.0))?;
                let to = string(it.next(), "what replaces it")?;
                if to.contains(['*', '#', ' ']) {
                    return Err(err("what replaces holds no `*`, `#` or space"));
                }
                RuleKind::Replace {
                    from,
                    to: to.to_owned(),
                }
            }
            "default-document" => RuleKind::DefaultDocument {
                name: name(string(it.next(), "a document name")?, "a document name")?,
                path: path_in(&mut it)?,
            },
            "trailing-slash" => {
                let add = match word(it.next(), "`add` or `remove`")? {
                    "add" => true,
                    "remove" => false,
                    other => {
                        return Err(err(format!("expected `add` or `remove`, found `{other}`")));
                    }
                };
                RuleKind::TrailingSlash {
                    add,
                    path: path_in(&mut it)?,
                }
            }
            other => {
                return Err(err(format!(
                    "unknown rule `{other}` (rules are ignore-param, replace, default-document, trailing-slash)"
                )));
            }
        };
        end(it.next())?;
        Ok(kind)
    }
}

impl fmt::Display for RuleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleKind::IgnoreParam { name, value, path } => {
                let param = match value {
                    Some(v) => format!("{name}={v}"),
                    None => name.clone(),
                };
                write!(
                    f,
                    "ignore-param {} in {}",
                    quote(&param),
                    quote(&path.to_string())
                )
            }
            RuleKind::Replace { from, to } => {
                write!(f, "replace {} {}", quote(&from.to_string()), quote(to))
            }
            RuleKind::DefaultDocument { name, path } => write!(
                f,
                "default-document {} in {}",
                quote(name),
                quote(&path.to_string())
            ),
            RuleKind::TrailingSlash { add, path } => write!(
                f,
                "trailing-slash {} in {}",
                if *add { "add" } else { "remove" },
                quote(&path.to_string())
            ),
        }
    }
}

impl fmt::Display for RuleSet {
    /// The text form, starting with the format line and a short comment.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "rules-format {FORMAT_VERSION}")?;
        writeln!(
            f,
            "# url-dedup rules: each maps the URLs of one page onto one URL. A host's rules apply\n\
             # in order. A candidate is trusted once its status is confirmed; delete a rule to stop it."
        )?;
        for h in &self.hosts {
            writeln!(f, "\nhost {}", quote(&h.host))?;
            for r in &h.rules {
                writeln!(f, "{}", r.kind)?;
                writeln!(f, "    support {}", r.support)?;
                writeln!(f, "    status {} checked={}", r.status, r.checked)?;
                for (from, to) in &r.predicts {
                    writeln!(f, "    predicts {} {}", quote(from), quote(to))?;
                }
            }
        }
        Ok(())
    }
}

fn number<T: FromStr>(text: &str, what: &str) -> Result<T, ParseError> {
    if text.is_empty()
        || !text.bytes().all(|b| b.is_ascii_digit())
        || (text.len() > 1 && text.starts_with('0'))
    {
        return Err(err(format!(
            "{what} is a whole number without leading zeros, not `{text}`"
        )));
    }
    text.parse()
        .map_err(|_| err(format!("{what} `{text}` is too large")))
}

fn support(toks: &[Token]) -> Result<Support, ParseError> {
    let mut it = toks.iter();
    let mut s = Support::default();
    let mut seen = [false; 3];
    for (i, key) in ["pages", "saved", "confidence"].iter().enumerate() {
        let w = word(it.next(), &format!("`{key}=`"))?;
        let Some(value) = w.strip_prefix(key).and_then(|v| v.strip_prefix('=')) else {
            return Err(err(format!(
                "expected `{key}=` (support is pages=N saved=N confidence=N%), found `{w}`"
            )));
        };
        match i {
            0 => s.pages = number(value, "pages")?,
            1 => s.saved = number(value, "saved")?,
            _ => {
                let pct = value
                    .strip_suffix('%')
                    .ok_or_else(|| err("confidence is a percentage: `confidence=91%`"))?;
                s.confidence = number(pct, "confidence")?;
                if s.confidence > 100 {
                    return Err(err("confidence is at most 100%"));
                }
            }
        }
        seen[i] = true;
    }
    end(it.next())?;
    Ok(s)
}

impl RuleSet {
    /// Reads the text form (the crate documentation describes it).
    ///
    /// # Errors
    ///
    /// [`ParseError`] naming the first line that is not part of the form, and why.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_rules::RuleSet;
    ///
    /// let text = r#"rules-format 1
    /// ## print views are the article
    /// host "wiki.example"
    /// replace "/print/" "/"
    ///     support pages=4 saved=4 confidence=100%
    ///     status candidate checked=1
    ///     predicts "https://wiki.example/print/Main" "https://wiki.example/Main"
    /// "#;
    /// let set = RuleSet::parse(text)?;
    /// let (_, host, rule) = set.iter().next().unwrap();
    /// assert_eq!((host, rule.checked, rule.support.pages), ("wiki.example", 1, 4));
    /// assert!(RuleSet::parse("rules-format 2\n").is_err());
    /// # Ok::<(), url_dedup_rules::ParseError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut set = RuleSet::new();
        let mut format_seen = false;
        let mut host: Option<String> = None;
        // The rule being read, and which of its detail lines were seen.
        let mut current: Option<(crate::RuleId, bool, bool)> = None;
        for (i, raw) in text.lines().enumerate() {
            let at = |e: ParseError| ParseError {
                line: i + 1,
                message: e.message,
            };
            let line = raw.trim_end();
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let indented = trimmed.len() != line.len();
            if !format_seen {
                let toks = tokens(trimmed).map_err(at)?;
                match toks.as_slice() {
                    [Token::Word(w), Token::Word(v)] if w == "rules-format" && !indented => {
                        if v != &FORMAT_VERSION.to_string() {
                            return Err(at(err(format!(
                                "rules-format {v} is not one this version reads (it reads {FORMAT_VERSION})"
                            ))));
                        }
                        format_seen = true;
                        continue;
                    }
                    _ => return Err(at(err("a rules file starts with `rules-format 1`"))),
                }
            }
            if indented {
                let Some((id, support_seen, status_seen)) = current.as_mut() else {
                    return Err(at(err("an indented line comes after a rule")));
                };
                let toks = tokens(trimmed).map_err(at)?;
                let rule = &mut set.hosts[id.host as usize].rules[id.rule as usize];
                match toks.first() {
                    Some(Token::Word(w)) if w == "support" => {
                        if std::mem::replace(support_seen, true) {
                            return Err(at(err("a second `support` line for one rule")));
                        }
                        rule.support = support(&toks[1..]).map_err(at)?;
                    }
                    Some(Token::Word(w)) if w == "status" => {
                        if std::mem::replace(status_seen, true) {
                            return Err(at(err("a second `status` line for one rule")));
                        }
                        let mut it = toks[1..].iter();
                        rule.status =
                            match word(it.next(), "`candidate` or `confirmed`").map_err(at)? {
                                "candidate" => Status::Candidate,
                                "confirmed" => Status::Confirmed,
                                other => {
                                    return Err(at(err(format!(
                                        "a status is `candidate` or `confirmed`, not `{other}`"
                                    ))));
                                }
                            };
                        if let Some(t) = it.next() {
                            let w = word(Some(t), "`checked=N`").map_err(at)?;
                            let n = w.strip_prefix("checked=").ok_or_else(|| {
                                at(err(format!("expected `checked=N`, found `{w}`")))
                            })?;
                            rule.checked = number(n, "checked").map_err(at)?;
                        }
                        end(it.next()).map_err(at)?;
                    }
                    Some(Token::Word(w)) if w == "predicts" => {
                        let mut it = toks[1..].iter();
                        let from = string(it.next(), "a URL").map_err(at)?;
                        let to = string(it.next(), "the URL it maps onto").map_err(at)?;
                        end(it.next()).map_err(at)?;
                        for u in [from, to] {
                            if crate::parts::split(u).is_none() || u.contains(' ') {
                                return Err(at(err(format!(
                                    "{} is not an absolute URL",
                                    quote(u)
                                ))));
                            }
                        }
                        rule.predicts.push((from.to_owned(), to.to_owned()));
                    }
                    _ => {
                        return Err(at(err(
                            "a rule's details are `support`, `status` and `predicts` lines",
                        )));
                    }
                }
                continue;
            }
            let toks = tokens(trimmed).map_err(at)?;
            match toks.first() {
                Some(Token::Word(w)) if w == "host" => {
                    let mut it = toks[1..].iter();
                    let h = string(it.next(), "a host").map_err(at)?;
                    end(it.next()).map_err(at)?;
                    if h.is_empty()
                        || h.bytes()
                            .any(|b| b"/?#@ ".contains(&b) || b.is_ascii_uppercase())
                    {
                        return Err(at(err(format!(
                            "a host is written in lower case, without scheme, path or user: {}",
                            quote(h)
                        ))));
                    }
                    if set.hosts().any(|known| known == h) {
                        return Err(at(err(format!(
                            "host {} comes twice: put its rules together",
                            quote(h)
                        ))));
                    }
                    set.hosts.push(crate::set::HostRules {
                        host: h.to_owned(),
                        rules: Vec::new(),
                    });
                    host = Some(h.to_owned());
                    current = None;
                }
                Some(Token::Word(w)) if w == "rules-format" => {
                    return Err(at(err("a second `rules-format` line")));
                }
                _ => {
                    let kind: RuleKind = trimmed.parse().map_err(at)?;
                    let Some(h) = &host else {
                        return Err(at(err(
                            "a rule comes after a `host` line that names its host",
                        )));
                    };
                    let id = set.push(h, Rule::new(kind));
                    current = Some((id, false, false));
                }
            }
        }
        if !format_seen {
            return Err(ParseError {
                line: 1,
                message: "a rules file starts with `rules-format 1`".to_owned(),
            });
        }
        Ok(set)
    }
}

impl FromStr for RuleSet {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> (usize, String) {
        let e = RuleSet::parse(text).unwrap_err();
        (e.line, e.message)
    }

    #[test]
    fn every_error_names_its_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("", 1, "starts with"),
            ("host \"a\"\n", 1, "starts with"),
            ("rules-format 1\nrules-format 1\n", 2, "second"),
            ("rules-format 1\nhost \"A.example\"\n", 2, "lower case"),
            ("rules-format 1\nhost \"a\"\nhost \"a\"\n", 3, "twice"),
            (
                "rules-format 1\nhost \"a\"\nignore-parm \"x\" in \"/**\"\n",
                3,
                "unknown rule",
            ),
            (
                "rules-format 1\nhost \"a\"\nignore-param \"x\" in \"**\"\n",
                3,
                "starts with `/`",
            ),
            (
                "rules-format 1\nhost \"a\"\nignore-param x in \"/**\"\n",
                3,
                "double quotes",
            ),
            (
                "rules-format 1\nhost \"a\"\nignore-param \"x\" \"/**\"\n",
                3,
                "expected `in`",
            ),
            (
                "rules-format 1\nhost \"a\"\nreplace \"/p/\" \"/\" extra\n",
                3,
                "unexpected `extra`",
            ),
            (
                "rules-format 1\nhost \"a\"\nreplace \"/p/\n",
                3,
                "not closed",
            ),
            (
                "rules-format 1\nhost \"a\"\nreplace \"*\" \"/\"\n",
                3,
                "starts with a literal",
            ),
            (
                "rules-format 1\n    support pages=1 saved=1 confidence=1%\n",
                2,
                "comes after a rule",
            ),
            (
                "rules-format 1\nhost \"a\"\nreplace \"/p/\" \"/\"\n    support pages=1 saved=1\n",
                4,
                "`confidence=`",
            ),
            (
                "rules-format 1\nhost \"a\"\nreplace \"/p/\" \"/\"\n    support pages=01 saved=1 confidence=1%\n",
                4,
                "leading zeros",
            ),
            (
                "rules-format 1\nhost \"a\"\nreplace \"/p/\" \"/\"\n    support pages=1 saved=1 confidence=101%\n",
                4,
                "at most 100%",
            ),
            (
                "rules-format 1\nhost \"a\"\nreplace \"/p/\" \"/\"\n    status maybe\n",
                4,
                "not `maybe`",
            ),
            (
                "rules-format 1\nhost \"a\"\nreplace \"/p/\" \"/\"\n    status confirmed\n    status confirmed\n",
                5,
                "second `status`",
            ),
            (
                "rules-format 1\nhost \"a\"\nreplace \"/p/\" \"/\"\n    predicts \"/a\" \"/b\"\n",
                4,
                "absolute URL",
            ),
            (
                "rules-format 1\nhost \"a\"\nreplace \"/p/\" \"/\"\n    colour blue\n",
                4,
                "details",
            ),
            ("rules-format 2\n", 1, "not one this version reads"),
        ];
        for (text, line, part) in cases {
            let (l, m) = error(text);
            assert_eq!(l, *line, "{text:?}: {m}");
            assert!(m.contains(part), "{text:?}: {m}");
        }
    }

    #[test]
    fn quotes_and_backslashes_round_trip() {
        let kind = RuleKind::Replace {
            from: "/a\"b\\c/".parse().unwrap(),
            to: "/".into(),
        };
        assert_eq!(kind.to_string().parse::<RuleKind>().unwrap(), kind);
    }

    #[test]
    fn comments_and_blank_lines_are_for_reading() {
        let set = RuleSet::parse(
            "# a file\n\nrules-format 1\n# about the host\nhost \"a\"\n\n  # indented comment\nreplace \"/p/\" \"/\"\n",
        )
        .unwrap();
        assert_eq!(set.len(), 1);
        assert_eq!(set.iter().next().unwrap().2.status, Status::Confirmed);
    }
}
