//! The two patterns of the rule language: path patterns (`/list/*`, `/**`) that say where a
//! rule applies, and substitution patterns (`/s/*/`) that say what a `replace` rule replaces.

use std::fmt;

use crate::parts::is_separator;

/// Where in a site a rule applies: a path of literal segments, `*` for any one segment, and
/// `**` as the last segment for any number of segments (none included).
///
/// # Examples
///
/// ```
/// use url_dedup_rules::PathPattern;
///
/// let p: PathPattern = "/list/*".parse()?;
/// assert!(p.matches("/list/7"));
/// assert!(!p.matches("/list/7/edit") && !p.matches("/list"));
/// let any: PathPattern = "/**".parse()?;
/// assert!(any.matches("/") && any.matches("/a/b/c"));
/// assert_eq!(PathPattern::template_of("/blog/2024/my-first-post"), "/blog/*/*".parse()?);
/// # Ok::<(), url_dedup_rules::PatternError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathPattern {
    /// Segments after the leading `/`; `None` is `*`.
    segments: Vec<Option<String>>,
    /// Whether the pattern ends in `/**`.
    rest: bool,
}

/// A pattern that could not be read.
///
/// # Examples
///
/// ```
/// assert!("no-slash".parse::<url_dedup_rules::PathPattern>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatternError(pub(crate) String);

impl PathPattern {
    /// The pattern that matches every path (`/**`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_rules::PathPattern::any().to_string(), "/**");
    /// ```
    pub fn any() -> Self {
        Self {
            segments: Vec::new(),
            rest: true,
        }
    }

    /// The pattern that matches `path` only.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = url_dedup_rules::PathPattern::exact("/a/b");
    /// assert!(p.matches("/a/b") && !p.matches("/a/c"));
    /// ```
    pub fn exact(path: &str) -> Self {
        Self {
            segments: segments(path).map(|s| Some(s.to_owned())).collect(),
            rest: false,
        }
    }

    /// The template of `path`: each segment that looks like a value (it has a digit or a
    /// `%`, two or more `-` or `_`, or more than 24 characters) becomes `*`.
    ///
    /// # Examples
    ///
    /// See [`PathPattern`].
    pub fn template_of(path: &str) -> Self {
        Self {
            segments: segments(path)
                .map(|s| (!crate::parts::is_variable_segment(s)).then(|| s.to_owned()))
                .collect(),
            rest: false,
        }
    }

    /// Whether `path` (a URL's path, without query) matches.
    ///
    /// # Examples
    ///
    /// See [`PathPattern`].
    pub fn matches(&self, path: &str) -> bool {
        let mut it = segments(path);
        for want in &self.segments {
            match (it.next(), want) {
                (None, _) => return false,
                (Some(got), Some(lit)) if got != lit => return false,
                _ => {}
            }
        }
        self.rest || it.next().is_none()
    }
}

/// The segments of a path: `/` is one empty segment, `/a/` is `a` and an empty one.
fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.strip_prefix('/').unwrap_or(path).split('/')
}

impl fmt::Display for PathPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.segments {
            write!(f, "/{}", s.as_deref().unwrap_or("*"))?;
        }
        if self.rest {
            f.write_str("/**")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for PathPattern {
    type Err = PatternError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let Some(body) = s.strip_prefix('/') else {
            return Err(PatternError(format!(
                "a path pattern starts with `/`: `{s}`"
            )));
        };
        if s.bytes()
            .any(|b| b == b'?' || b == b'#' || b.is_ascii_whitespace())
        {
            return Err(PatternError(format!(
                "a path pattern has no query, fragment or space: `{s}`"
            )));
        }
        let mut parts: Vec<&str> = body.split('/').collect();
        let rest = parts.last() == Some(&"**");
        if rest {
            parts.pop();
        }
        if parts.contains(&"**") {
            return Err(PatternError(format!(
                "`**` only ends a path pattern: `{s}`"
            )));
        }
        let segments = parts
            .into_iter()
            .map(|p| (p != "*").then(|| p.to_owned()))
            .collect();
        Ok(Self { segments, rest })
    }
}

/// What a `replace` rule looks for: literal text with `*` for the rest of a token (one or
/// more characters up to the next `/`, `?`, `&`, `=` or `;`). A match must start and end at a
/// token boundary: just after or at a separator, or at the start or end of the path and query.
///
/// # Examples
///
/// ```
/// use url_dedup_rules::SubstitutionPattern;
///
/// let p: SubstitutionPattern = "/s-*/".parse()?;
/// assert_eq!(p.find("/a/s-9f8e7d/b", 0), Some((2, 12)));
/// assert_eq!(p.find("/a/xs-9f8e7d/b", 0), None);
/// # Ok::<(), url_dedup_rules::PatternError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubstitutionPattern {
    pieces: Vec<Piece>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Piece {
    Literal(String),
    Wild,
}

impl SubstitutionPattern {
    /// The literal the pattern starts with (every pattern starts with one).
    pub(crate) fn anchor(&self) -> &str {
        match self.pieces.first() {
            Some(Piece::Literal(l)) => l,
            _ => "",
        }
    }

    /// The first match in `text` at or after `from`, as a byte range.
    pub fn find(&self, text: &str, from: usize) -> Option<(usize, usize)> {
        let anchor = self.anchor();
        let bytes = text.as_bytes();
        let mut at = from;
        while at <= text.len() {
            let i = at + memchr::memmem::find(bytes.get(at..)?, anchor.as_bytes())?;
            if let Some(end) = self.match_at(bytes, i) {
                return Some((i, end));
            }
            at = i + 1;
        }
        None
    }

    /// The end of a match that starts at `i`, if one does.
    fn match_at(&self, text: &[u8], i: usize) -> Option<usize> {
        let starts_at_boundary = i == 0
            || is_separator(text[i - 1])
            || self.anchor().bytes().next().is_some_and(is_separator);
        if !starts_at_boundary {
            return None;
        }
        let mut at = i;
        for piece in &self.pieces {
            match piece {
                Piece::Literal(l) => {
                    if !text[at..].starts_with(l.as_bytes()) {
                        return None;
                    }
                    at += l.len();
                }
                Piece::Wild => {
                    let run = text[at..]
                        .iter()
                        .take_while(|&&b| !is_separator(b) && b != b'#')
                        .count();
                    if run == 0 {
                        return None;
                    }
                    at += run;
                }
            }
        }
        let last_is_separator = at > i && is_separator(text[at - 1]);
        let ends_at_boundary =
            at == text.len() || is_separator(text[at]) || text[at] == b'#' || last_is_separator;
        ends_at_boundary.then_some(at)
    }
}

impl fmt::Display for SubstitutionPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.pieces {
            match p {
                Piece::Literal(l) => f.write_str(l)?,
                Piece::Wild => f.write_str("*")?,
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for SubstitutionPattern {
    type Err = PatternError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut pieces = Vec::new();
        for (i, lit) in s.split('*').enumerate() {
            if i > 0 {
                if matches!(pieces.last(), Some(Piece::Wild)) {
                    return Err(PatternError(format!(
                        "`**` in a substitution pattern: `{s}`"
                    )));
                }
                pieces.push(Piece::Wild);
            }
            if !lit.is_empty() {
                pieces.push(Piece::Literal(lit.to_owned()));
            }
        }
        match pieces.first() {
            Some(Piece::Literal(l))
                if l.bytes().filter(u8::is_ascii_alphanumeric).count() >= 2 || l.len() >= 3 => {}
            _ => {
                return Err(PatternError(format!(
                    "a substitution pattern starts with a literal of at least three characters, \
                     or two letters or digits: `{s}`"
                )));
            }
        }
        // A `*` stands for the rest of a token: a letter or digit right after it would never
        // match.
        for w in pieces.windows(2) {
            if let [Piece::Wild, Piece::Literal(l)] = w
                && !l.bytes().next().is_some_and(is_separator)
            {
                return Err(PatternError(format!(
                    "a `*` in a substitution pattern is followed by a separator (`/?&=;`) or ends it: `{s}`"
                )));
            }
        }
        Ok(Self { pieces })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(s: &str) -> SubstitutionPattern {
        s.parse().unwrap()
    }

    #[test]
    fn path_patterns_round_trip_and_match() {
        for s in ["/**", "/", "/a", "/a/*", "/a/*/b/**", "/*"] {
            let p: PathPattern = s.parse().unwrap();
            assert_eq!(p.to_string(), s);
        }
        assert!("/a/**/b".parse::<PathPattern>().is_err());
        assert!("/a?b".parse::<PathPattern>().is_err());
        let root: PathPattern = "/".parse().unwrap();
        assert!(root.matches("/") && !root.matches("/a"));
        let star: PathPattern = "/*".parse().unwrap();
        assert!(star.matches("/") && star.matches("/a") && !star.matches("/a/"));
        let dir: PathPattern = "/a/**".parse().unwrap();
        assert!(
            dir.matches("/a") && dir.matches("/a/") && dir.matches("/a/b/c") && !dir.matches("/b")
        );
    }

    #[test]
    fn substitutions_match_at_token_boundaries() {
        assert_eq!(pat("/print/").find("/print/a", 0), Some((0, 7)));
        assert_eq!(
            pat("index.php?title=").find("/w/index.php?title=X", 0),
            Some((3, 19))
        );
        assert_eq!(
            pat("index.php?title=").find("/w/xindex.php?title=X", 0),
            None
        );
        assert_eq!(pat("index.html").find("/a/index.html", 0), Some((3, 13)));
        assert_eq!(pat("index.html").find("/a/index.htmlx", 0), None);
        assert_eq!(pat("sid-*/").find("/sid-abc/x", 0), Some((1, 9)));
        assert_eq!(pat("sid-*/").find("/sid-/x", 0), None);
        assert_eq!(pat("/s/*").find("/s/abc?x=1", 0), Some((0, 6)));
        // The second occurrence is found when the first is not at a boundary.
        assert_eq!(pat("ab/").find("/xab/ab/", 0), Some((5, 8)));
    }

    #[test]
    fn substitution_patterns_are_checked() {
        for bad in ["", "*", "*/a", "a", "/*x", "s**/"] {
            assert!(bad.parse::<SubstitutionPattern>().is_err(), "{bad}");
        }
        for good in ["/print/", "ab", "sid-*/", "/s/*", "?sid=*&"] {
            assert_eq!(pat(good).to_string(), good);
        }
    }
}
