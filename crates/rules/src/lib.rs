#![doc = include_str!("../README.md")]
//!
//! # The method
//!
//! Many URLs of a site serve one page: `index.php?title=X` and `index.php/X`, a print view,
//! `?replytocom=`, a sort order, a session token, `index.html`. What a crawl fetched shows
//! them: URLs whose pages have the same content digest. A [`Learner`] takes `(URL, digest)`
//! pairs, finds the rules that map the URLs of one page onto one URL, keeps those that fold
//! the URLs of enough pages and never two different pages, and says for each how much
//! evidence it has ([`Support`]). The learner module documents the steps.
//!
//! A learned rule is a [`Status::Candidate`]: it lists a few URLs it predicts to be
//! duplicates ([`Rule::predicts`]); a crawler fetches some and records the result
//! ([`RuleSet::record_check`]), and the rule is [`Status::Confirmed`] after three right
//! predictions and removed at the first wrong one (DustBuster's validation).
//!
//! # Rules
//!
//! | rule | what it does |
//! |---|---|
//! | `ignore-param "NAME" in "PATH"` | drops query parameter `NAME` from URLs whose path matches `PATH` |
//! | `ignore-param "NAME=VALUE" in "PATH"` | drops it only with that value (`page=1`) |
//! | `replace "FROM" "TO"` | replaces `FROM` (a `*` stands for the rest of a token) by `TO` in the path and query |
//! | `default-document "NAME" in "PATH"` | drops a last path segment `NAME` in the directories `PATH` matches |
//! | `trailing-slash remove\|add in "PATH"` | drops or adds the `/` that ends the paths `PATH` matches |
//!
//! Path patterns ([`PathPattern`]) are literal segments, `*` for one segment, and `/**` at the
//! end for any number. A host's rules apply in order, each to what the rules before it made.
//! [`Rules`] applies a set at a bounded cost per URL: a URL meets only the rules of its host
//! that may apply to it, found through an index.
//!
//! # The text form
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
//! Each line is one thing: the format line (first), a `host` line, a rule, or an indented
//! detail of the rule above it. Strings are in double quotes (`\"` and `\\` inside). Lines
//! that start with `#` are comments; a rule without `status` is confirmed (a person wrote
//! it). [`RuleSet::parse`] refuses anything else with the line and the reason, and
//! `RuleSet::to_string` writes what `parse` reads back unchanged.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod apply;
mod diff;
mod learn;
mod parts;
mod pattern;
mod rule;
mod set;
mod text;
pub use apply::Rules;
pub use learn::{LearnOptions, Learned, Learner, NotAbsolute, Rejected, Report};
pub use pattern::{PathPattern, PatternError, SubstitutionPattern};
pub use rule::{Rule, RuleKind, Status, Support};
pub use set::{CHECKS_TO_CONFIRM, Check, RuleId, RuleSet};
pub use text::{FORMAT_VERSION, ParseError};

#[cfg(feature = "testing")]
pub mod testing;
