//! Lists of query-parameter names, matched without regard to ASCII case.

/// A list of parameter names: exact names, or prefixes written with a trailing `*`
/// (`utm_*`). Matching ignores ASCII case, so `UTM_Source` matches `utm_*`.
///
/// # Examples
///
/// ```
/// use url_dedup_canon::ParamList;
///
/// let list = ParamList::new(["ref", "utm_*"]);
/// assert!(list.matches("REF"));
/// assert!(list.matches("utm_campaign"));
/// assert!(!list.matches("referrer"));
/// assert!(!list.matches("id"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamList {
    exact: Vec<Box<str>>,
    prefixes: Vec<Box<str>>,
    /// Bit `n` set when some exact name has `n` bytes (names of 64 bytes or more share bit
    /// 63): most parameter names are rejected by one test, before any comparison.
    exact_lengths: u64,
    /// Bit `b % 128` set for the lower-cased first byte `b` of every exact name (bit 0 for
    /// the empty name), and of every prefix (every bit once a prefix is empty: `*`): a name
    /// whose first byte has no bit in either is compared with nothing. The length test alone
    /// let common names through (`ref` has the length of `_ga`), and prefixes had none.
    exact_first: u128,
    /// The same for the prefixes.
    prefix_first: u128,
}

impl ParamList {
    /// A list from names; a name ending in `*` is a prefix.
    ///
    /// # Examples
    ///
    /// ```
    /// let list = url_dedup_canon::ParamList::new(["sid"]);
    /// assert!(list.matches("SID"));
    /// ```
    pub fn new<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut list = Self::default();
        for name in names {
            list.push(name.as_ref());
        }
        list
    }

    /// Adds a name (or a prefix ending in `*`).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut list = url_dedup_canon::ParamList::tracking();
    /// assert!(!list.matches("campaign_id"));
    /// list.push("campaign_id");
    /// assert!(list.matches("campaign_id"));
    /// ```
    pub fn push(&mut self, name: &str) {
        let lower = name.to_ascii_lowercase().into_boxed_str();
        match lower.strip_suffix('*') {
            Some(prefix) => {
                self.prefix_first |= match prefix.as_bytes().first() {
                    Some(&b) => first_byte_bit(b),
                    None => u128::MAX,
                };
                self.prefixes.push(prefix.into());
            }
            None => {
                self.exact_lengths |= length_bit(lower.len());
                self.exact_first |= first_bit(lower.as_bytes());
                self.exact.push(lower);
            }
        }
    }

    /// Whether `name` is in the list.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup_canon::ParamList::tracking().matches("fbclid"));
    /// ```
    #[inline]
    pub fn matches(&self, name: &str) -> bool {
        let name = name.as_bytes();
        let first = first_bit(name);
        (self.exact_lengths & length_bit(name.len()) != 0
            && self.exact_first & first != 0
            && self
                .exact
                .iter()
                .any(|e| e.as_bytes().eq_ignore_ascii_case(name)))
            || (self.prefix_first & first != 0
                && self.prefixes.iter().any(|p| {
                    name.len() >= p.len() && p.as_bytes().eq_ignore_ascii_case(&name[..p.len()])
                }))
    }

    /// Whether the list is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup_canon::ParamList::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.prefixes.is_empty()
    }

    /// The default tracking parameters: campaign tags (`utm_*`, Matomo `pk_*` and `mtm_*`),
    /// advertising click ids (Google, Microsoft, Meta, Yandex, TikTok, X, LinkedIn), e-mail
    /// campaign ids (Mailchimp, HubSpot, Marketo) and analytics linkers (`_ga`, `_gl`).
    ///
    /// # Examples
    ///
    /// ```
    /// let list = url_dedup_canon::ParamList::tracking();
    /// assert!(list.matches("utm_source") && list.matches("gclid") && list.matches("mc_eid"));
    /// assert!(!list.matches("id"));
    /// ```
    pub fn tracking() -> Self {
        Self::new([
            "utm_*",
            "pk_*",
            "mtm_*",
            "gclid",
            "gclsrc",
            "dclid",
            "gbraid",
            "wbraid",
            "msclkid",
            "fbclid",
            "yclid",
            "ttclid",
            "twclid",
            "li_fat_id",
            "igshid",
            "mc_eid",
            "mc_cid",
            "_hsenc",
            "_hsmi",
            "mkt_tok",
            "_ga",
            "_gl",
        ])
    }

    /// The default session-id parameters, names used for nothing else and so removed
    /// whatever their value: Java (`jsessionid`), PHP (`phpsessid`), ASP (`aspsessionid*`),
    /// ColdFusion (`cfid`, `cftoken`, always a pair of client numbers), osCommerce (`oscsid`),
    /// Zen Cart (`zenid`) and the spelled-out `sessionid` and `session_id`.
    ///
    /// Short names such as `sid` are not here: they are in [`ParamList::session_token`], whose
    /// parameters go only when the value looks like a session token.
    ///
    /// # Examples
    ///
    /// ```
    /// let list = url_dedup_canon::ParamList::session();
    /// assert!(list.matches("JSESSIONID") && list.matches("ASPSESSIONIDQQGGGNCU"));
    /// assert!(!list.matches("sid"));
    /// ```
    pub fn session() -> Self {
        Self::new([
            "jsessionid",
            "phpsessid",
            "aspsessionid*",
            "sessionid",
            "session_id",
            "cfid",
            "cftoken",
            "oscsid",
            "zenid",
        ])
    }

    /// The default ambiguous session names, removed only when the value
    /// [looks like a session token](crate::looks_like_session_token): `sid` (a PHP session
    /// name, but the story id of Slash and PHP-Nuke sites), `s` (vBulletin's session hash, but
    /// WordPress's search words), `session`, `sess` and `sessid`.
    ///
    /// `id`, `ref`, `token` and the like are deliberately absent: a long random value in them
    /// is as often a document id, a commit or a download key as a session, and each names a
    /// page.
    ///
    /// # Examples
    ///
    /// ```
    /// let list = url_dedup_canon::ParamList::session_token();
    /// assert!(list.matches("SID") && list.matches("s"));
    /// assert!(!list.matches("id") && !list.matches("ref"));
    /// ```
    pub fn session_token() -> Self {
        Self::new(["sid", "s", "session", "sess", "sessid"])
    }
}

#[inline]
fn length_bit(len: usize) -> u64 {
    1 << len.min(63)
}

/// The bit of a name's first byte, whatever its ASCII case; bit 0 for the empty name.
#[inline]
fn first_bit(name: &[u8]) -> u128 {
    name.first().map_or(1, |&b| first_byte_bit(b))
}

#[inline]
fn first_byte_bit(b: u8) -> u128 {
    1 << (b.to_ascii_lowercase() & 127)
}
