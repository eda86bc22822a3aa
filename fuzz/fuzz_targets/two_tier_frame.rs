//! Frames arrive from other nodes' Redis writes: decoding arbitrary bytes must never panic, and
//! whatever decodes must respect the limits and re-encode to a frame that decodes the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url_dedup_two_tier::{Frame, FrameLimits};

fuzz_target!(|data: &[u8]| {
    let limits = FrameLimits {
        max_bytes: 64 << 10,
        max_urls: 64,
        max_url_len: 256,
    };
    if let Ok(frame) = Frame::decode(data, &limits) {
        assert!(frame.url_set.len() <= limits.max_urls);
        assert!(
            frame
                .url_set
                .urls()
                .all(|u| !u.is_empty() && u.len() <= limits.max_url_len)
        );
        let again = Frame::decode(
            &frame.encode(),
            &FrameLimits {
                max_bytes: usize::MAX,
                ..limits
            },
        )
        .expect("a decoded frame re-encodes to a valid frame");
        assert_eq!(again, frame);
    }
});
