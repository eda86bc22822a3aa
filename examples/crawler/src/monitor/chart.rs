//! Small line charts as inline SVG: no script, no request, readable without colour (the
//! axis says the scale, the caption the current value).

use std::fmt::Write;

/// Drawing size, in SVG units (the page scales it to its column).
const WIDTH: f64 = 360.0;
const HEIGHT: f64 = 130.0;
/// Room for the scale on the left and the time labels below.
const LEFT: f64 = 46.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 20.0;

/// One series to draw: `(seconds since start, value)` pairs, oldest first.
#[derive(Debug)]
pub(crate) struct Series<'a> {
    /// Names the chart for screen readers and the test.
    pub(crate) name: &'a str,
    pub(crate) points: Vec<(f64, f64)>,
    /// A CSS class giving the line's colour.
    pub(crate) class: &'a str,
}

/// The chart of `series` as an `<svg>` element.
pub(crate) fn svg(series: &Series<'_>) -> String {
    let mut out = format!(
        r#"<svg class="chart {class}" data-series="{name}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{name} over time">"#,
        class = series.class,
        name = super::page::escape(series.name),
    );
    let points = &series.points;
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        out.push_str(&message("no sample yet"));
        return out + "</svg>";
    };
    let top = nice_ceiling(points.iter().map(|p| p.1).fold(0.0, f64::max));
    let span = (last.0 - first.0).max(1e-9);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |t: f64| LEFT + (t - first.0) / span * plot_w;
    let y = |v: f64| TOP + plot_h - v / top * plot_h;
    for (value, label) in [
        (0.0, "0".to_owned()),
        (top / 2.0, compact(top / 2.0)),
        (top, compact(top)),
    ] {
        let _ = write!(
            out,
            r#"<line class="grid" x1="{LEFT}" x2="{x2}" y1="{y:.1}" y2="{y:.1}"/><text class="scale" x="{tx}" y="{ty:.1}" text-anchor="end">{label}</text>"#,
            x2 = WIDTH - RIGHT,
            y = y(value),
            tx = LEFT - 5.0,
            ty = y(value) + 4.0,
        );
    }
    let _ = write!(
        out,
        r#"<text class="scale" x="{LEFT}" y="{by}">{ago}</text><text class="scale" x="{rx}" y="{by}" text-anchor="end">now</text>"#,
        by = HEIGHT - 5.0,
        ago = if points.len() > 1 {
            format!("{} ago", duration(span))
        } else {
            "one sample so far".to_owned()
        },
        rx = WIDTH - RIGHT,
    );
    let line: Vec<String> = if points.len() == 1 {
        // One sample: a flat line across, so the value reads at a glance.
        vec![
            format!("{LEFT:.1},{:.1}", y(first.1)),
            format!("{:.1},{:.1}", WIDTH - RIGHT, y(first.1)),
        ]
    } else {
        points
            .iter()
            .map(|&(t, v)| format!("{:.1},{:.1}", x(t), y(v)))
            .collect()
    };
    let base = y(0.0);
    let _ = write!(
        out,
        r#"<polygon class="area" points="{LEFT:.1},{base:.1} {line} {right:.1},{base:.1}"/><polyline class="line" points="{line}"/>"#,
        line = line.join(" "),
        right = WIDTH - RIGHT,
    );
    let _ = write!(
        out,
        r#"<circle class="dot" cx="{:.1}" cy="{:.1}" r="3"/>"#,
        if points.len() == 1 {
            WIDTH - RIGHT
        } else {
            x(last.0)
        },
        y(last.1)
    );
    out + "</svg>"
}

fn message(text: &str) -> String {
    format!(
        r#"<text class="scale" x="{}" y="{}" text-anchor="middle">{text}</text>"#,
        WIDTH / 2.0,
        HEIGHT / 2.0
    )
}

/// The smallest of 1, 2 or 5 times a power of ten at or above `v` (1 for nothing).
pub(crate) fn nice_ceiling(v: f64) -> f64 {
    if !v.is_finite() || v <= 0.0 {
        return 1.0;
    }
    let power = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&c| c >= v * (1.0 - 1e-12))
        .unwrap_or(10.0 * power)
}

/// A scale label: `0.5`, `20`, `1.5k`, `2M`.
pub(crate) fn compact(v: f64) -> String {
    let (value, suffix) = if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = if value >= 10.0 || value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    };
    format!("{text}{suffix}")
}

/// A span of seconds as a person says it: `40 s`, `12 min`, `3.5 h`.
pub(crate) fn duration(secs: f64) -> String {
    if secs < 90.0 {
        format!("{secs:.0} s")
    } else if secs < 90.0 * 60.0 {
        format!("{:.0} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_are_round_numbers() {
        let cases = [
            (0.0, 1.0),
            (0.3, 0.5),
            (1.0, 1.0),
            (1.2, 2.0),
            (4.0, 5.0),
            (7.0, 10.0),
            (180.0, 200.0),
            (2_500.0, 5_000.0),
        ];
        for (v, top) in cases {
            assert_eq!(nice_ceiling(v), top, "{v}");
        }
        assert_eq!(nice_ceiling(f64::NAN), 1.0);
        assert_eq!(compact(0.5), "0.5");
        assert_eq!(compact(100.0), "100");
        assert_eq!(compact(2_500.0), "2.5k");
        assert_eq!(compact(20_000.0), "20k");
        assert_eq!(compact(3e6), "3M");
        assert_eq!(duration(40.0), "40 s");
        assert_eq!(duration(720.0), "12 min");
        assert_eq!(duration(12_600.0), "3.5 h");
    }

    #[test]
    fn a_chart_draws_every_point_within_its_box() {
        let s = Series {
            name: "pages/s",
            points: vec![(0.0, 0.0), (2.0, 5.0), (4.0, 3.0)],
            class: "pages",
        };
        let svg = svg(&s);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"), "{svg}");
        let line = svg
            .split(r#"<polyline class="line" points=""#)
            .nth(1)
            .unwrap();
        let line = line.split('"').next().unwrap();
        let points: Vec<(f64, f64)> = line
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        assert_eq!(points.len(), 3);
        for (x, y) in points {
            assert!((LEFT..=WIDTH - RIGHT).contains(&x), "{x}");
            assert!((TOP..=HEIGHT - BOTTOM).contains(&y), "{y}");
        }
        // The scale goes to 5, a round number at or above the highest value.
        assert!(svg.contains(">5</text>"), "{svg}");
        let empty = super::svg(&Series {
            name: "queue",
            points: Vec::new(),
            class: "queue",
        });
        assert!(empty.contains("no sample yet"), "{empty}");
    }
}
