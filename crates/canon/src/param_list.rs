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
            Some(prefix) => self.prefixes.push(prefix.into()),
            None => {
                self.exact_lengths |= length_bit(lower.len());
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
    pub fn matches(&self, name: &str) -> bool {
        let name = name.as_bytes();
        (self.exact_lengths & length_bit(name.len()) != 0
            && self
                .exact
                .iter()
                .any(|e| e.as_bytes().eq_ignore_ascii_case(name)))
            || self.prefixes.iter().any(|p| {
                name.len() >= p.len() && p.as_bytes().eq_ignore_ascii_case(&name[..p.len()])
            })
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

    /// The default session-id parameters: Java (`jsessionid`), PHP (`phpsessid`), ASP
    /// (`aspsessionid*`), ColdFusion (`cfid`, `cftoken`) and the generic `sid`, `sessionid`,
    /// `session_id`.
    ///
    /// # Examples
    ///
    /// ```
    /// let list = url_dedup_canon::ParamList::session();
    /// assert!(list.matches("JSESSIONID") && list.matches("ASPSESSIONIDQQGGGNCU"));
    /// ```
    pub fn session() -> Self {
        Self::new([
            "jsessionid",
            "phpsessid",
            "aspsessionid*",
            "sid",
            "sessionid",
            "session_id",
            "cfid",
            "cftoken",
        ])
    }
}

#[inline]
fn length_bit(len: usize) -> u64 {
    1 << len.min(63)
}
