//! The report's charts: line charts drawn by plotters' SVG backend into strings, inlined in the page.

use plotters::prelude::*;

use crate::error::{Error, Result};

/// Chart size in CSS pixels.
const SIZE: (u32, u32) = (560, 300);

/// Series colours, distinct on white (and for the usual colour blindnesses, as far as eight go).
const COLOURS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 94, 240),
    RGBColor(90, 90, 90),
];

/// One line: its legend label and a value per loop (loop 1 first).
pub struct Series<'a> {
    pub label: &'a str,
    pub values: Vec<f64>,
}

fn failed(e: impl std::fmt::Display) -> Error {
    Error::config(format!("--report: cannot draw a chart: {e}"))
}

/// A line chart of `series` over the loops, as an `<svg>` element; `whole`: the values are counts (ticks
/// on whole numbers only).
pub fn lines(title: &str, y_label: &str, whole: bool, series: &[Series]) -> Result<String> {
    let loops = series.iter().map(|s| s.values.len()).max().unwrap_or(0);
    let top = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .fold(0.0f64, f64::max);
    // Room above the highest line for the legend (a line of 18 px per series in a plot of about 230 px).
    let legend = (18.0 * series.len() as f64 + 14.0) / 230.0;
    let top = top.max(1.0) / (0.95 - legend.min(0.6));
    let y_format = move |y: &f64| {
        if !whole {
            format!("{y:.2}")
        } else if (y - y.round()).abs() < 1e-9 {
            format!("{y:.0}")
        } else {
            String::new()
        }
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(failed)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(52)
            .build_cartesian_2d(0.5f64..(loops.max(1) as f64 + 0.5), 0f64..top)
            .map_err(failed)?;
        chart
            .configure_mesh()
            .x_desc("loop")
            .y_desc(y_label)
            .x_labels(loops.clamp(1, 12))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&y_format)
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(failed)?;
        for (i, s) in series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let points: Vec<(f64, f64)> = s
                .values
                .iter()
                .enumerate()
                .map(|(l, v)| (l as f64 + 1.0, *v))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
                .map_err(failed)?
                .label(s.label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(3))
                });
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, colour.filled())),
                )
                .map_err(failed)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(failed)?;
        root.present().map_err(failed)?;
    }
    Ok(svg)
}
