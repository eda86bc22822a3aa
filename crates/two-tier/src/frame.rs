//! The protocol's one message: `{URL_set, IP, number, flag}` in JSON, exactly as the paper's
//! figure 2 names its fields.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::FrameError;

/// What a frame asks for: the paper's `flag`.
///
/// Serialized as the bare numbers 1, 2 and 3.
///
/// # Examples
///
/// ```
/// use url_dedup_two_tier::Flag;
///
/// assert_eq!(serde_json::to_string(&Flag::Request).unwrap(), "2");
/// assert_eq!(serde_json::from_str::<Flag>("3").unwrap(), Flag::Answer);
/// assert!(serde_json::from_str::<Flag>("4").is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flag {
    /// 1: a local host submits URLs that survived its local dedup to its center.
    Submit,
    /// 2: a dedup request: the center asks hosts (or another network's center) which of the
    /// URLs they already finished.
    Request,
    /// 3: a dedup answer: the request's `URL_set` with 1 on every URL the answerer finished.
    Answer,
}

impl Flag {
    /// The number on the wire.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::Flag;
    ///
    /// assert_eq!(Flag::Submit.code(), 1);
    /// ```
    pub const fn code(self) -> u8 {
        match self {
            Self::Submit => 1,
            Self::Request => 2,
            Self::Answer => 3,
        }
    }

    /// The flag for a wire number, if it is one.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::Flag;
    ///
    /// assert_eq!(Flag::from_code(2), Some(Flag::Request));
    /// assert_eq!(Flag::from_code(0), None);
    /// ```
    pub const fn from_code(code: u64) -> Option<Self> {
        match code {
            1 => Some(Self::Submit),
            2 => Some(Self::Request),
            3 => Some(Self::Answer),
            _ => None,
        }
    }
}

impl Serialize for Flag {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.code())
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let code = u64::deserialize(d)?;
        Self::from_code(code)
            .ok_or_else(|| de::Error::invalid_value(de::Unexpected::Unsigned(code), &"1, 2 or 3"))
    }
}

/// The paper's `URL_set`: a JSON object with each URL as a key and 0 (default) or 1 (finished
/// by the host that answered) as its value.
///
/// Kept sorted, so equal sets encode to equal bytes. Decoding rejects a repeated key (JSON
/// allows it, but which value would win is a guess) and any value other than 0 or 1.
///
/// # Examples
///
/// ```
/// use url_dedup_two_tier::UrlSet;
///
/// let mut set = UrlSet::from_urls(["https://b.example/", "https://a.example/"]);
/// set.mark("https://b.example/");
/// assert_eq!(
///     serde_json::to_string(&set).unwrap(),
///     r#"{"https://a.example/":0,"https://b.example/":1}"#
/// );
/// assert!(serde_json::from_str::<UrlSet>(r#"{"u":0,"u":1}"#).is_err());
/// assert!(serde_json::from_str::<UrlSet>(r#"{"u":2}"#).is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UrlSet(BTreeMap<String, bool>);

impl UrlSet {
    /// A set with every URL at 0. Repeated URLs collapse into one key.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::UrlSet;
    ///
    /// assert_eq!(UrlSet::from_urls(["u", "u", "v"]).len(), 2);
    /// ```
    pub fn from_urls<I, S>(urls: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self(urls.into_iter().map(|u| (u.into(), false)).collect())
    }

    /// Number of URLs.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::UrlSet;
    ///
    /// assert_eq!(UrlSet::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set holds no URL.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::UrlSet;
    ///
    /// assert!(UrlSet::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets `url`'s value to 1; false if the set does not hold `url`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::UrlSet;
    ///
    /// let mut set = UrlSet::from_urls(["u"]);
    /// assert!(set.mark("u"));
    /// assert!(!set.mark("v"));
    /// assert_eq!(set.marked().collect::<Vec<_>>(), ["u"]);
    /// ```
    pub fn mark(&mut self, url: &str) -> bool {
        match self.0.get_mut(url) {
            Some(value) => {
                *value = true;
                true
            }
            None => false,
        }
    }

    /// Whether `url` is in the set and marked 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::UrlSet;
    ///
    /// let mut set = UrlSet::from_urls(["u"]);
    /// assert!(!set.is_marked("u"));
    /// set.mark("u");
    /// assert!(set.is_marked("u"));
    /// ```
    pub fn is_marked(&self, url: &str) -> bool {
        self.0.get(url).copied().unwrap_or(false)
    }

    /// Every URL, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::UrlSet;
    ///
    /// assert_eq!(UrlSet::from_urls(["b", "a"]).urls().collect::<Vec<_>>(), ["a", "b"]);
    /// ```
    pub fn urls(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.0.keys().map(String::as_str)
    }

    /// The URLs marked 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::UrlSet;
    ///
    /// assert_eq!(UrlSet::from_urls(["a"]).marked().count(), 0);
    /// ```
    pub fn marked(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.iter().filter(|(_, m)| **m).map(|(u, _)| u.as_str())
    }

    /// Removes every URL that `answer` marks 1 (the paper's step for answers to a request of
    /// its own network) and returns how many were removed. URLs of `answer` that this set no
    /// longer holds are ignored, which makes applying the same answer twice harmless.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::UrlSet;
    ///
    /// let mut pending = UrlSet::from_urls(["a", "b", "c"]);
    /// let mut answer = pending.clone();
    /// answer.mark("b");
    /// assert_eq!(pending.remove_marked(&answer), 1);
    /// assert_eq!(pending.urls().collect::<Vec<_>>(), ["a", "c"]);
    /// assert_eq!(pending.remove_marked(&answer), 0);
    /// ```
    pub fn remove_marked(&mut self, answer: &Self) -> usize {
        let before = self.0.len();
        for url in answer.marked() {
            self.0.remove(url);
        }
        before - self.0.len()
    }

    /// Marks 1 every URL that `answer` marks 1 and this set holds (the paper's step for
    /// answers to another network's request, which must travel back with its marks) and
    /// returns how many changed from 0 to 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::UrlSet;
    ///
    /// let mut foreign = UrlSet::from_urls(["a", "b"]);
    /// let mut answer = foreign.clone();
    /// answer.mark("a");
    /// assert_eq!(foreign.merge_marks(&answer), 1);
    /// assert_eq!(foreign.merge_marks(&answer), 0);
    /// assert!(foreign.is_marked("a") && !foreign.is_marked("b"));
    /// ```
    pub fn merge_marks(&mut self, answer: &Self) -> usize {
        let mut changed = 0;
        for url in answer.marked() {
            if let Some(value) = self.0.get_mut(url) {
                changed += usize::from(!*value);
                *value = true;
            }
        }
        changed
    }

    /// Sets every value back to 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::UrlSet;
    ///
    /// let mut set = UrlSet::from_urls(["a"]);
    /// set.mark("a");
    /// set.clear_marks();
    /// assert_eq!(set.marked().count(), 0);
    /// ```
    pub fn clear_marks(&mut self) {
        self.0.values_mut().for_each(|m| *m = false);
    }
}

impl Serialize for UrlSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (url, &marked) in &self.0 {
            map.serialize_entry(url, &u8::from(marked))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for UrlSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SetVisitor;

        impl<'de> Visitor<'de> for SetVisitor {
            type Value = UrlSet;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of URLs to 0 or 1")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UrlSet, A::Error> {
                let mut set = BTreeMap::new();
                while let Some((url, mark)) = map.next_entry::<String, u64>()? {
                    let marked = match mark {
                        0 => false,
                        1 => true,
                        other => {
                            return Err(de::Error::invalid_value(
                                de::Unexpected::Unsigned(other),
                                &"0 or 1",
                            ));
                        }
                    };
                    if set.insert(url, marked).is_some() {
                        return Err(de::Error::custom("a URL appears twice in URL_set"));
                    }
                }
                Ok(UrlSet(set))
            }
        }

        d.deserialize_map(SetVisitor)
    }
}

/// Size limits for frames read from Redis or built from local input.
///
/// Every frame is checked against them before it is parsed (bytes) and after (URLs), so a
/// peer, or anyone who can write to a Redis of the system, cannot make a node allocate without
/// bound. The receive script enforces `max_bytes` inside Redis: an oversized frame never
/// crosses the network.
///
/// # Examples
///
/// ```
/// use url_dedup_two_tier::FrameLimits;
///
/// let limits = FrameLimits::default();
/// assert_eq!(limits.max_urls, 4_096);
/// assert!(limits.max_bytes >= limits.max_urls * 64);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLimits {
    /// Largest encoded frame, in bytes.
    pub max_bytes: usize,
    /// Most URLs in one `URL_set`.
    pub max_urls: usize,
    /// Longest URL, in bytes.
    pub max_url_len: usize,
}

impl Default for FrameLimits {
    /// 4 MiB, 4,096 URLs of up to 2,048 bytes (the length browsers and crawlers commonly cap).
    fn default() -> Self {
        Self {
            max_bytes: 4 << 20,
            max_urls: 4_096,
            max_url_len: 2_048,
        }
    }
}

/// One protocol message: `{"URL_set": {...}, "IP": "...", "number": n, "flag": f}`.
///
/// * `URL_set`: the URLs being deduplicated, each with its mark;
/// * `IP`: the address of the node the request belongs to: the host that submitted it while it
///   is in its own network, the center once it travels to other networks. Answers keep the
///   request's `IP`, so a center knows whose request an answer is for;
/// * `number`: unique in the whole system (see [`FrameNumber`](crate::FrameNumber));
/// * `flag`: [`Flag`].
///
/// # Examples
///
/// ```
/// use url_dedup_two_tier::{Flag, Frame, FrameLimits, UrlSet};
///
/// let frame = Frame {
///     url_set: UrlSet::from_urls(["https://example.com/"]),
///     ip: "10.1.0.1".parse()?,
///     number: 1025,
///     flag: Flag::Submit,
/// };
/// let json = frame.encode();
/// assert_eq!(
///     std::str::from_utf8(&json)?,
///     r#"{"URL_set":{"https://example.com/":0},"IP":"10.1.0.1","number":1025,"flag":1}"#
/// );
/// assert_eq!(Frame::decode(&json, &FrameLimits::default())?, frame);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Frame {
    /// The paper's `URL_set`.
    #[serde(rename = "URL_set")]
    pub url_set: UrlSet,
    /// The paper's `IP`.
    #[serde(rename = "IP")]
    pub ip: IpAddr,
    /// The paper's `number`.
    pub number: u64,
    /// The paper's `flag`.
    pub flag: Flag,
}

impl Frame {
    /// The frame as JSON bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::{Flag, Frame, UrlSet};
    ///
    /// let f = Frame { url_set: UrlSet::default(), ip: "::1".parse()?, number: 7, flag: Flag::Answer };
    /// assert_eq!(f.encode(), br#"{"URL_set":{},"IP":"::1","number":7,"flag":3}"#);
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        // Serializing strings, integers and an address into a Vec cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Parses and checks a frame: size first, then JSON shape, then the URL limits and a
    /// non-zero `number`.
    ///
    /// # Errors
    ///
    /// A [`FrameError`] naming the first problem found.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::{Frame, FrameError, FrameLimits};
    ///
    /// let limits = FrameLimits::default();
    /// assert!(matches!(Frame::decode(b"{", &limits), Err(FrameError::Json(_))));
    /// let zero = br#"{"URL_set":{},"IP":"10.0.0.1","number":0,"flag":1}"#;
    /// assert!(matches!(Frame::decode(zero, &limits), Err(FrameError::ZeroNumber)));
    /// ```
    pub fn decode(bytes: &[u8], limits: &FrameLimits) -> Result<Self, FrameError> {
        if bytes.len() > limits.max_bytes {
            return Err(FrameError::TooLarge {
                bytes: bytes.len(),
                max: limits.max_bytes,
            });
        }
        let frame: Self =
            serde_json::from_slice(bytes).map_err(|e| FrameError::Json(e.to_string()))?;
        frame.check(limits)?;
        Ok(frame)
    }

    /// Checks the URL limits and the number of a frame built or decoded here.
    ///
    /// # Errors
    ///
    /// [`FrameError::TooManyUrls`], [`FrameError::BadUrl`] or [`FrameError::ZeroNumber`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::{Flag, Frame, FrameError, FrameLimits, UrlSet};
    ///
    /// let limits = FrameLimits { max_urls: 1, ..FrameLimits::default() };
    /// let f = Frame { url_set: UrlSet::from_urls(["a", "b"]), ip: "10.0.0.1".parse()?, number: 1, flag: Flag::Submit };
    /// assert!(matches!(f.check(&limits), Err(FrameError::TooManyUrls { urls: 2, max: 1 })));
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn check(&self, limits: &FrameLimits) -> Result<(), FrameError> {
        if self.number == 0 {
            return Err(FrameError::ZeroNumber);
        }
        if self.url_set.len() > limits.max_urls {
            return Err(FrameError::TooManyUrls {
                urls: self.url_set.len(),
                max: limits.max_urls,
            });
        }
        for url in self.url_set.urls() {
            check_url(url, limits)?;
        }
        Ok(())
    }
}

/// Whether one URL may travel in a frame: non-empty, at most `max_url_len` bytes, no control
/// characters (which no canonical URL holds and which would make logs lie).
pub(crate) fn check_url(url: &str, limits: &FrameLimits) -> Result<(), FrameError> {
    let reason = if url.is_empty() {
        "empty"
    } else if url.len() > limits.max_url_len {
        "longer than max_url_len"
    } else if url.chars().any(char::is_control) {
        "contains control characters"
    } else {
        return Ok(());
    };
    Err(FrameError::BadUrl {
        url: url.chars().take(80).collect(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits() -> FrameLimits {
        FrameLimits::default()
    }

    #[test]
    fn field_names_are_the_papers() {
        let json = br#"{"flag":2,"number":9,"IP":"10.0.0.2","URL_set":{"u":1}}"#;
        let f = Frame::decode(json, &limits()).unwrap();
        assert_eq!(f.flag, Flag::Request);
        assert!(f.url_set.is_marked("u"));
    }

    #[test]
    fn rejects_unknown_fields_missing_fields_and_bad_values() {
        for bad in [
            &br#"{"URL_set":{},"IP":"10.0.0.1","number":1,"flag":1,"x":0}"#[..],
            br#"{"URL_set":{},"IP":"10.0.0.1","number":1}"#,
            br#"{"URL_set":{},"IP":"not-an-ip","number":1,"flag":1}"#,
            br#"{"URL_set":{},"IP":"10.0.0.1","number":-1,"flag":1}"#,
            br#"{"URL_set":{"u":"0"},"IP":"10.0.0.1","number":1,"flag":1}"#,
            br#"{"URL_set":[],"IP":"10.0.0.1","number":1,"flag":1}"#,
            br#"{"URL_set":{},"IP":"10.0.0.1","number":1,"flag":0}"#,
            b"",
            b"null",
        ] {
            assert!(
                Frame::decode(bad, &limits()).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn rejects_bad_urls() {
        let json = br#"{"URL_set":{"a\u0000b":0},"IP":"10.0.0.1","number":1,"flag":1}"#;
        assert!(matches!(
            Frame::decode(json, &limits()),
            Err(FrameError::BadUrl { .. })
        ));
        let json = br#"{"URL_set":{"":0},"IP":"10.0.0.1","number":1,"flag":1}"#;
        assert!(matches!(
            Frame::decode(json, &limits()),
            Err(FrameError::BadUrl { .. })
        ));
    }

    fn arb_frame() -> impl Strategy<Value = Frame> {
        (
            proptest::collection::btree_map("[a-z:/.]{1,30}", any::<bool>(), 0..20),
            any::<[u8; 4]>(),
            1..u64::MAX,
            1..=3u64,
        )
            .prop_map(|(set, ip, number, flag)| Frame {
                url_set: UrlSet(set),
                ip: IpAddr::from(ip),
                number,
                flag: Flag::from_code(flag).unwrap(),
            })
    }

    proptest! {
        #[test]
        fn encode_decode_round_trips(frame in arb_frame()) {
            prop_assert_eq!(Frame::decode(&frame.encode(), &limits()).unwrap(), frame);
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Frame::decode(&bytes, &limits());
        }

        #[test]
        fn decode_respects_limits(frame in arb_frame(), max_urls in 0usize..10, max_bytes in 0usize..400) {
            let small = FrameLimits { max_urls, max_bytes, max_url_len: 2048 };
            let bytes = frame.encode();
            if let Ok(f) = Frame::decode(&bytes, &small) {
                prop_assert!(bytes.len() <= max_bytes);
                prop_assert!(f.url_set.len() <= max_urls);
            }
        }

        /// Removing marked URLs is set difference, whatever order and repetition answers come in.
        #[test]
        fn answers_apply_as_set_difference(
            urls in proptest::collection::btree_set("[a-e]{1,2}", 0..20),
            answers in proptest::collection::vec(proptest::collection::btree_set("[a-e]{1,2}", 0..10), 0..5),
        ) {
            let mut pending = UrlSet::from_urls(urls.iter().cloned());
            let mut expected = urls.clone();
            for finished in answers.iter().chain(answers.iter()) {
                let mut answer = UrlSet::from_urls(urls.iter().cloned());
                for u in finished { answer.mark(u); }
                pending.remove_marked(&answer);
                for u in finished { expected.remove(u); }
            }
            prop_assert_eq!(pending.urls().map(str::to_owned).collect::<std::collections::BTreeSet<_>>(), expected);
        }
    }
}
