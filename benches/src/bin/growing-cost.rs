//! What a URL costs in the default growing filter at each fill level: `growing-cost [RATE]
//! [FIRST]` prints a markdown table for a filter whose first layer holds FIRST items (default
//! 1,000,000) at target RATE (default 1e-9, the `url-dedup` command's).
//!
//! Fill is the distinct items held over FIRST. For each fill the table gives the layers the
//! filter has (a layer is added only once the newest holds more than its capacity), the bits
//! and bytes of all layers over the items held, the bits over a blocked filter's for the same
//! items at the target rate, and the cache lines a new item's lookup reads (every layer's
//! segment; a held item stops at the layer that holds it, newest first). Computed from the
//! filter's own plan (`GrowthPlan::layer`), so it is exact for these parameters.

use url_dedup_bloom::sizing::Sizing;
use url_dedup_segmented::GrowingFilter;

fn main() {
    let mut args = std::env::args().skip(1);
    let rate: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1e-9);
    let first: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let plan = GrowingFilter::builder()
        .expected_items(first)
        .false_positive_rate(rate)
        .plan()
        .expect("valid parameters");
    let lines_per_segment = plan.segment_bits.div_ceil(512);
    println!(
        "first layer {first} items, target rate {rate:e}, segments of {} bits ({lines_per_segment} \
         cache line(s)), growth x{} at {} times the rate\n",
        plan.segment_bits, plan.growth.factor, plan.growth.tightening
    );
    println!(
        "| fill | layers | bits per item | bytes per item | vs a blocked filter | lines a new item reads |"
    );
    println!("|---|---|---|---|---|---|");
    for fill in [
        0.25, 0.5, 1.0, 1.01, 2.0, 3.0, 3.03, 5.0, 7.0, 7.07, 10.0, 15.0,
    ] {
        let items = (fill * first as f64) as u64;
        let (mut layers, mut capacity, mut bits) = (0u32, 0u64, 0u64);
        while capacity < items || layers == 0 {
            let (layout, held, _) = plan.layer(layers).expect("layer");
            capacity += held;
            bits += layout.bits();
            layers += 1;
        }
        let blocked = Sizing::blocked(items, rate, plan.segment_bits)
            .map(|s| s.bits)
            .expect("blocked sizing");
        println!(
            "| {fill} | {layers} | {:.1} | {:.1} | {:.2}x | {} |",
            bits as f64 / items as f64,
            bits as f64 / 8.0 / items as f64,
            bits as f64 / blocked as f64,
            u64::from(layers) * lines_per_segment,
        );
    }
}
