//! Internationalized host names as the reproduced projects convert them: Python's `idna` codec
//! (IDNA 2003: nameprep, then Punycode), used by w3lib and the `surt` package, and the raw
//! Punycode of Google's Safe Browsing client. Neither is UTS 46, which the WHATWG parser (and
//! so the crawler policy) applies: IDNA 2003 accepts ASCII punctuation inside a label and maps
//! `ß` to `ss`, UTS 46 does neither.

/// Punycode parameters (RFC 3492 section 5).
const BASE: u32 = 36;
const T_MIN: u32 = 1;
const T_MAX: u32 = 26;
const SKEW: u32 = 38;
const DAMP: u32 = 700;
const INITIAL_BIAS: u32 = 72;
const INITIAL_N: u32 = 128;

/// Bias adaptation (RFC 3492 section 6.1).
fn adapt(delta: u32, points: u32, first: bool) -> u32 {
    let mut delta = if first { delta / DAMP } else { delta / 2 };
    delta += delta / points;
    let mut k = 0;
    while delta > ((BASE - T_MIN) * T_MAX) / 2 {
        delta /= BASE - T_MIN;
        k += BASE;
    }
    k + ((BASE - T_MIN + 1) * delta) / (delta + SKEW)
}

fn digit(d: u32) -> char {
    // `d < 36` by construction: letters for 0-25, digits for 26-35.
    let byte = if d < 26 {
        b'a' + d as u8
    } else {
        b'0' + (d - 26) as u8
    };
    char::from(byte)
}

/// The Punycode encoding of `label` (RFC 3492 section 6.3), without the `xn--` prefix; `None`
/// on overflow (labels far beyond DNS length limits).
pub(crate) fn punycode(label: &str) -> Option<String> {
    let code_points: Vec<u32> = label.chars().map(u32::from).collect();
    let mut out: String = label.chars().filter(char::is_ascii).collect();
    let basic = out.len() as u32;
    let mut handled = basic;
    if basic > 0 {
        out.push('-');
    }
    let (mut n, mut delta, mut bias) = (INITIAL_N, 0u32, INITIAL_BIAS);
    while (handled as usize) < code_points.len() {
        let m = code_points.iter().copied().filter(|&c| c >= n).min()?;
        delta = delta.checked_add((m - n).checked_mul(handled + 1)?)?;
        n = m;
        for &c in &code_points {
            if c < n {
                delta = delta.checked_add(1)?;
            }
            if c == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = if k <= bias {
                        T_MIN
                    } else if k >= bias + T_MAX {
                        T_MAX
                    } else {
                        k - bias
                    };
                    if q < t {
                        break;
                    }
                    out.push(digit(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                out.push(digit(q));
                bias = adapt(delta, handled + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta = delta.checked_add(1)?;
        n = n.checked_add(1)?;
    }
    Some(out)
}

/// Label separators of IDNA 2003: full stop and its ideographic and full-width forms.
fn is_dot(c: char) -> bool {
    matches!(c, '.' | '\u{3002}' | '\u{ff0e}' | '\u{ff61}')
}

/// `host.encode("idna")` in Python: each label through ToASCII (ASCII labels as they are,
/// others nameprepped and Punycode-encoded with `xn--`), every label 1 to 63 bytes but a
/// trailing empty one. `None` where Python raises `UnicodeError`.
///
/// Nameprep is reproduced but for its NFKC step and the full bidirectional tables (compatibility
/// characters and right-to-left labels mixed with left-to-right letters can differ).
pub(crate) fn python_idna(host: &str) -> Option<String> {
    if host.is_empty() {
        return Some(String::new());
    }
    let mut labels: Vec<&str> = host.split(is_dot).collect();
    let trailing_dot = labels.len() > 1 && labels.last().is_some_and(|l| l.is_empty());
    if trailing_dot {
        labels.pop();
    }
    let mut out = String::with_capacity(host.len() + 8);
    for (i, label) in labels.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        out.push_str(&to_ascii(label)?);
    }
    if trailing_dot {
        out.push('.');
    }
    Some(out)
}

/// IDNA 2003 ToASCII of one label, with `UseSTD3ASCIIRules` off, as Python applies it.
fn to_ascii(label: &str) -> Option<String> {
    let within_limits = |s: &str| (1..64).contains(&s.len());
    if label.is_ascii() {
        return within_limits(label).then(|| label.to_owned());
    }
    let prepared = nameprep(label)?;
    if prepared.is_ascii() {
        return within_limits(&prepared).then_some(prepared);
    }
    if prepared
        .get(..4)
        .is_some_and(|p| p.eq_ignore_ascii_case("xn--"))
    {
        return None;
    }
    let encoded = format!("xn--{}", punycode(&prepared)?);
    within_limits(&encoded).then_some(encoded)
}

/// Nameprep (RFC 3491): characters mapped to nothing removed, case folded, prohibited
/// characters and mixed-direction labels rejected. NFKC is not applied.
fn nameprep(label: &str) -> Option<String> {
    let mut out = String::with_capacity(label.len());
    for c in label.chars() {
        match c {
            // Table B.1: commonly mapped to nothing.
            '\u{ad}'
            | '\u{34f}'
            | '\u{1806}'
            | '\u{180b}'..='\u{180d}'
            | '\u{200b}'..='\u{200d}'
            | '\u{2060}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}' => {}
            // Table B.2 folds these beyond lower case.
            'ß' => out.push_str("ss"),
            'ς' => out.push('σ'),
            _ => out.extend(c.to_lowercase()),
        }
    }
    if out.chars().any(is_prohibited) {
        return None;
    }
    let rtl = |c: char| matches!(u32::from(c), 0x0590..=0x08ff | 0xfb1d..=0xfdff | 0xfe70..=0xfefc);
    if out.chars().any(rtl) {
        let first_last = out.chars().next().is_some_and(rtl) && out.chars().last().is_some_and(rtl);
        let left_to_right = out.chars().any(|c| c.is_alphabetic() && !rtl(c));
        if !first_last || left_to_right {
            return None;
        }
    }
    Some(out)
}

/// Nameprep's prohibited output (RFC 3454 tables C.1.2, C.2.2, C.3 to C.9).
fn is_prohibited(c: char) -> bool {
    let cp = u32::from(c);
    matches!(
        cp,
        // C.1.2 non-ASCII spaces
        0x00a0 | 0x1680 | 0x2000..=0x200b | 0x202f | 0x205f | 0x3000
        // C.2.2 non-ASCII controls
        | 0x0080..=0x009f | 0x06dd | 0x070f | 0x180e | 0x200c | 0x200d | 0x2028 | 0x2029
        | 0x2060..=0x2063 | 0x206a..=0x206f | 0xfeff | 0xfff9..=0xfffc | 0x1d173..=0x1d17a
        // C.3 private use
        | 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd
        // C.4 non-characters
        | 0xfdd0..=0xfdef
        // C.6 inappropriate for plain text
        | 0xfffd
        // C.7 inappropriate for canonical representation
        | 0x2ff0..=0x2ffb
        // C.8 change display properties
        | 0x0340 | 0x0341 | 0x200e | 0x200f | 0x202a..=0x202e
        // C.9 tagging characters
        | 0xe0001 | 0xe0020..=0xe007f
    ) || cp & 0xfffe == 0xfffe
}

/// Each non-ASCII label Punycode-encoded as it is, with `xn--`, no mapping and no checks: the
/// `Punycode` profile of `golang.org/x/net/idna` that Google's Safe Browsing client uses.
pub(crate) fn raw_punycode(host: &str) -> Option<String> {
    let mut out = String::with_capacity(host.len() + 8);
    for (i, label) in host.split('.').enumerate() {
        if i > 0 {
            out.push('.');
        }
        if label.is_ascii() {
            out.push_str(label);
        } else {
            out.push_str("xn--");
            out.push_str(&punycode(label)?);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 3492 section 7.1 samples (lower-cased, as Python and Go write them).
    #[test]
    fn punycode_samples_of_rfc_3492() {
        for (input, output) in [
            ("他们为什么不说中文", "ihqwcrb4cv8a8dqg056pqjye"),
            ("Pročprostěnemluvíčesky", "Proprostnemluvesky-uyb24dma41a"),
            ("bücher", "bcher-kva"),
            ("☃", "n3h"),
        ] {
            assert_eq!(punycode(input).as_deref(), Some(output), "{input}");
        }
    }

    #[test]
    fn python_idna_maps_rejects_and_keeps_ascii_labels() {
        assert_eq!(
            python_idna("www.Bücher.DE").as_deref(),
            Some("www.xn--bcher-kva.DE")
        );
        assert_eq!(python_idna("straße.de").as_deref(), Some("strasse.de"));
        assert_eq!(
            python_idna("|é.example").as_deref(),
            Some("xn--|-bga.example")
        );
        assert_eq!(python_idna("\u{1}\u{80}.com"), None);
        assert_eq!(python_idna(".é.com"), None);
        assert_eq!(python_idna("é.com.").as_deref(), Some("xn--9ca.com."));
        assert_eq!(
            python_idna("はじめよう。みんな").as_deref(),
            Some("xn--p8j9a0d9c9a.xn--q9jyb4c")
        );
    }

    #[test]
    fn raw_punycode_keeps_case_and_checks_nothing() {
        assert_eq!(
            raw_punycode("www.ümlat.com").as_deref(),
            Some("www.xn--mlat-zra.com")
        );
        assert_eq!(raw_punycode("ß").as_deref(), Some("xn--zca"));
    }
}
