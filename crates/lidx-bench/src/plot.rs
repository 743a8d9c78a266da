//! PNG plots of study results (plotters, bitmap backend), in the shape of the papers' figures.
//! Text is drawn by plotters' pure-Rust path (`ab_glyph`) in DejaVu Sans, which the build
//! carries (the `dejavu` crate), so a machine without fontconfig or any font draws the same.

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::Context as _;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor;

/// One named series of (x, y) points.
pub struct Series {
    /// The legend's label.
    pub name: String,
    /// The points, in any order (drawn sorted by x).
    pub points: Vec<(f64, f64)>,
}

/// How an axis is scaled.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Evenly spaced values.
    Linear,
    /// Evenly spaced powers (positive values only).
    Log,
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// A white canvas of `size` pixels that will be written to `path` as a PNG, with the font
/// every plot draws in ("sans-serif": DejaVu Sans) registered.
fn canvas(path: &Path, size: (u32, u32)) -> anyhow::Result<DrawingArea<BitMapBackend<'_>, Shift>> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| "the bundled DejaVu Sans font does not load".to_owned())
    })
    .clone()
    .map_err(anyhow::Error::msg)?;
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    Ok(root)
}

/// Short tick labels: 1.5k, 20M, 3G, and below 1 as many decimals as two significant
/// digits need (0.05, 0.0012), so small times do not all read 0.
fn tick(v: &f64) -> String {
    let a = v.abs();
    let (x, unit) = match a {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (*v, ""),
    };
    let decimals = if a > 0.0 && a < 1.0 {
        (1 - a.log10().floor() as i64).clamp(1, 12) as usize
    } else {
        1
    };
    let s = format!("{x:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    format!("{s}{unit}")
}

/// Ticks of a log axis: only where the leading digit is 1, 2 or 5, so the nine ticks of a
/// narrow decade do not run into each other.
fn log_tick(v: &f64) -> String {
    if *v <= 0.0 {
        return String::new();
    }
    let lead = v / 10f64.powf(v.log10().floor());
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|d| (lead - d).abs() < 1e-6)
    {
        tick(v)
    } else {
        String::new()
    }
}

/// The tick labels of an axis of `scale`.
fn ticks_of(scale: Scale) -> fn(&f64) -> String {
    match scale {
        Scale::Log => log_tick,
        Scale::Linear => tick,
    }
}

/// A chart of `series` at `path` (PNG, 1000×650), each axis linear or logarithmic, points
/// joined by lines when `lines`. Points a log axis cannot show (≤ 0) are left out.
pub fn chart(
    path: &Path,
    title: &str,
    (x_label, x_scale): (&str, Scale),
    (y_label, y_scale): (&str, Scale),
    series: &[Series],
    lines: bool,
) -> anyhow::Result<()> {
    let keep = |&(x, y): &(f64, f64)| {
        x.is_finite()
            && y.is_finite()
            && (x_scale == Scale::Linear || x > 0.0)
            && (y_scale == Scale::Linear || y > 0.0)
    };
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(keep)
        .collect();
    anyhow::ensure!(!all.is_empty(), "{}: nothing to plot", path.display());
    // A log axis over less than a decade gets no labelled ticks: draw it linear.
    let within_decade = |f: fn(&(f64, f64)) -> f64| {
        let lo = all.iter().map(f).fold(f64::INFINITY, f64::min);
        let hi = all.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
        hi < 10.0 * lo
    };
    let x_scale = match x_scale {
        Scale::Log if within_decade(|p| p.0) => Scale::Linear,
        scale => scale,
    };
    let y_scale = match y_scale {
        Scale::Log if within_decade(|p| p.1) => Scale::Linear,
        scale => scale,
    };
    let range = |f: fn(&(f64, f64)) -> f64, scale: Scale| -> Range<f64> {
        let lo = all.iter().map(f).fold(f64::INFINITY, f64::min);
        let hi = all.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
        match scale {
            Scale::Log => (lo / 1.5)..(hi * 1.5),
            Scale::Linear => {
                // Points all at 0 (one cache size of none) still get an axis of 1 each way.
                let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.05);
                let pad = if pad > 0.0 { pad } else { 1.0 };
                (lo - pad).min(0.0f64.max(lo - pad))..(hi + pad)
            }
        }
    };
    let (xr, yr) = (range(|p| p.0, x_scale), range(|p| p.1, y_scale));
    let tmp = path.with_extension("tmp.png");
    // Each pair of axis kinds is its own coordinate type in plotters.
    macro_rules! draw_on {
        ($x:expr, $y:expr) => {
            draw(
                &tmp,
                title,
                ($x, x_label, ticks_of(x_scale)),
                ($y, y_label, ticks_of(y_scale)),
                series,
                lines,
                &keep,
            )?
        };
    }
    match (x_scale, y_scale) {
        (Scale::Log, Scale::Log) => draw_on!(xr.log_scale(), yr.log_scale()),
        (Scale::Log, Scale::Linear) => draw_on!(xr.log_scale(), yr),
        (Scale::Linear, Scale::Log) => draw_on!(xr, yr.log_scale()),
        (Scale::Linear, Scale::Linear) => draw_on!(xr, yr),
    }
    std::fs::rename(&tmp, path)
        .with_context(|| format!("{}: cannot move the plot into place", path.display()))?;
    Ok(())
}

/// A grouped bar chart at `path` (PNG, 1000×650): one group per name in `groups`, one bar
/// per series in each, series `s`'s point `(g, y)` giving group `g`'s bar; the value axis
/// linear or logarithmic. Points a log axis cannot show (≤ 0) are left out.
pub fn bars(
    path: &Path,
    title: &str,
    groups: &[String],
    (y_label, y_scale): (&str, Scale),
    series: &[Series],
) -> anyhow::Result<()> {
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite() && (y_scale == Scale::Linear || *y > 0.0))
        .collect();
    anyhow::ensure!(
        !ys.is_empty() && !groups.is_empty(),
        "{}: nothing to plot",
        path.display()
    );
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tmp = path.with_extension("tmp.png");
    let xr = -0.5..(groups.len() as f64 - 0.5);
    let group_name = |v: &f64| -> String {
        let g = v.round();
        if (v - g).abs() < 1e-6 && g >= 0.0 {
            groups.get(g as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    {
        let root = canvas(&tmp, (1000, 650))?;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70);
        let width = 0.8 / series.len().max(1) as f64;
        macro_rules! draw_bars {
            ($yr:expr, $base:expr) => {{
                let mut chart = builder.build_cartesian_2d(xr.clone(), $yr)?;
                chart
                    .configure_mesh()
                    .disable_x_mesh()
                    .x_labels(groups.len())
                    .x_label_formatter(&group_name)
                    .y_desc(y_label)
                    .y_label_formatter(&ticks_of(y_scale))
                    .label_style(("sans-serif", 14))
                    .draw()?;
                for (i, s) in series.iter().enumerate() {
                    let color = PALETTE[i % PALETTE.len()];
                    let rects = s
                        .points
                        .iter()
                        .filter(|p| p.1.is_finite() && (y_scale == Scale::Linear || p.1 > 0.0))
                        .map(|&(g, y)| {
                            let x0 = g - 0.4 + i as f64 * width;
                            Rectangle::new([(x0, $base), (x0 + width * 0.95, y)], color.filled())
                        });
                    chart
                        .draw_series(rects)?
                        .label(s.name.clone())
                        .legend(move |(x, y)| {
                            Rectangle::new([(x + 4, y - 5), (x + 16, y + 5)], color.filled())
                        });
                }
                chart
                    .configure_series_labels()
                    .border_style(BLACK)
                    .background_style(WHITE.mix(0.9))
                    .label_font(("sans-serif", 14))
                    .position(SeriesLabelPosition::UpperLeft)
                    .draw()?;
            }};
        }
        match y_scale {
            Scale::Log => draw_bars!((lo / 2.0..hi * 3.0).log_scale(), lo / 2.0),
            // Room above the tallest bar for the legend, a line per series.
            Scale::Linear => draw_bars!(0.0..hi * (1.1 + 0.07 * series.len() as f64), 0.0),
        }
        root.present()
            .with_context(|| format!("{}: cannot write the plot", path.display()))?;
    }
    std::fs::rename(&tmp, path)
        .with_context(|| format!("{}: cannot move the plot into place", path.display()))?;
    Ok(())
}

/// One panel of a heatmap: `cells[r][c]` is row `r` (drawn top to bottom) of column `c`, a
/// ratio and a word to print in it (`None`: an empty cell).
pub struct HeatPanel {
    /// The panel's caption.
    pub title: String,
    /// Row names, top to bottom.
    pub rows: Vec<String>,
    /// Column names, left to right.
    pub columns: Vec<String>,
    /// The cells, one row per name in `rows`.
    pub cells: Vec<Vec<Option<(f64, String)>>>,
}

/// The colour of `ratio` on a log scale: white at 1, full green at 4 and above, full red
/// at 1/4 and below.
fn ratio_colour(ratio: f64) -> RGBColor {
    let t = (ratio.log2() / 2.0).clamp(-1.0, 1.0);
    let (to, t) = if t >= 0.0 {
        ((40.0, 160.0, 70.0), t)
    } else {
        ((215.0, 50.0, 40.0), -t)
    };
    let mix = |a: f64| (255.0 * (1.0 - t) + a * t) as u8;
    RGBColor(mix(to.0), mix(to.1), mix(to.2))
}

/// Heatmaps at `path` (PNG): `panels` side by side, `per_row` to a row, each cell
/// coloured by its ratio (green above 1, red below, on a log scale clipped at 4×) with
/// the ratio and its word printed in it; `x_label` and `y_label` name the columns and rows.
pub fn heatmaps(
    path: &Path,
    title: &str,
    (x_label, y_label): (&str, &str),
    panels: &[HeatPanel],
    per_row: usize,
) -> anyhow::Result<()> {
    anyhow::ensure!(!panels.is_empty(), "{}: nothing to plot", path.display());
    let per_row = per_row.clamp(1, panels.len());
    let panel_rows = panels.len().div_ceil(per_row);
    let tmp = path.with_extension("tmp.png");
    {
        // Room for every column's name and the title.
        let columns = panels.iter().map(|p| p.columns.len()).max().unwrap_or(1);
        let panel_width = (columns * 120 + 200).max(480);
        let size = (
            (per_row * panel_width).max(900) as u32,
            (panel_rows * 420 + 60) as u32,
        );
        let root = canvas(&tmp, size)?;
        let root = root.titled(title, ("sans-serif", 24))?;
        let areas = root.split_evenly((panel_rows, per_row));
        for (panel, area) in panels.iter().zip(areas) {
            let (rows, cols) = (panel.rows.len() as f64, panel.columns.len() as f64);
            // Room on the left for row names and below for column names.
            let mut chart = ChartBuilder::on(&area)
                .caption(&panel.title, ("sans-serif", 18))
                .margin(8)
                .build_cartesian_2d(-1.3..cols, -0.9..rows)?;
            let cells = panel.cells.iter().enumerate().flat_map(|(r, row)| {
                let y = rows - 1.0 - r as f64;
                row.iter().enumerate().filter_map(move |(c, cell)| {
                    let (ratio, _) = cell.as_ref()?;
                    let x = c as f64;
                    Some(Rectangle::new(
                        [(x + 0.02, y + 0.02), (x + 0.98, y + 0.98)],
                        ratio_colour(*ratio).filled(),
                    ))
                })
            });
            chart.draw_series(cells)?;
            let centre = ("sans-serif", 15)
                .into_font()
                .color(&BLACK)
                .pos(text_anchor::Pos::new(
                    text_anchor::HPos::Center,
                    text_anchor::VPos::Center,
                ));
            let mut words = Vec::new();
            for (r, row) in panel.cells.iter().enumerate() {
                let y = rows - 1.0 - r as f64;
                for (c, cell) in row.iter().enumerate() {
                    if let Some((ratio, word)) = cell {
                        let x = c as f64 + 0.5;
                        words.push(Text::new(
                            format!("{ratio:.2}x"),
                            (x, y + 0.62),
                            centre.clone(),
                        ));
                        words.push(Text::new(word.clone(), (x, y + 0.32), centre.clone()));
                    }
                }
            }
            for (c, name) in panel.columns.iter().enumerate() {
                words.push(Text::new(
                    name.clone(),
                    (c as f64 + 0.5, -0.25),
                    centre.clone(),
                ));
            }
            words.push(Text::new(
                x_label.to_string(),
                (cols / 2.0, -0.65),
                centre.clone(),
            ));
            let right = centre.pos(text_anchor::Pos::new(
                text_anchor::HPos::Right,
                text_anchor::VPos::Center,
            ));
            for (r, name) in panel.rows.iter().enumerate() {
                let y = rows - 1.0 - r as f64 + 0.5;
                words.push(Text::new(name.clone(), (-0.08, y), right.clone()));
            }
            words.push(Text::new(
                y_label.to_string(),
                (-0.08, rows - 0.1),
                right.clone(),
            ));
            chart.draw_series(words)?;
        }
        root.present()
            .with_context(|| format!("{}: cannot write the plot", path.display()))?;
    }
    std::fs::rename(&tmp, path)
        .with_context(|| format!("{}: cannot move the plot into place", path.display()))?;
    Ok(())
}

/// The corner of the plotting area (`x` and `y` pixel ranges) whose legend box would hide
/// the fewest of the `drawn` points (upper right on a tie).
fn legend_corner(
    (x, y): (Range<i32>, Range<i32>),
    series: &[Series],
    drawn: &[(i32, i32)],
) -> SeriesLabelPosition {
    let longest = series.iter().map(|s| s.name.len()).max().unwrap_or(0) as i32;
    let (w, h) = (40 + 8 * longest, 10 + 20 * series.len() as i32);
    let corners = [
        (
            SeriesLabelPosition::UpperRight,
            x.end - w..x.end,
            y.start..y.start + h,
        ),
        (
            SeriesLabelPosition::UpperLeft,
            x.start..x.start + w,
            y.start..y.start + h,
        ),
        (
            SeriesLabelPosition::LowerRight,
            x.end - w..x.end,
            y.end - h..y.end,
        ),
        (
            SeriesLabelPosition::LowerLeft,
            x.start..x.start + w,
            y.end - h..y.end,
        ),
    ];
    corners
        .into_iter()
        .min_by_key(|(_, bx, by)| {
            drawn
                .iter()
                .filter(|(px, py)| bx.contains(px) && by.contains(py))
                .count()
        })
        .map_or(SeriesLabelPosition::UpperRight, |(pos, _, _)| pos)
}

fn draw<X, Y>(
    path: &Path,
    title: &str,
    (x, x_label, x_ticks): (X, &str, fn(&f64) -> String),
    (y, y_label, y_ticks): (Y, &str, fn(&f64) -> String),
    series: &[Series],
    lines: bool,
    keep: &dyn Fn(&(f64, f64)) -> bool,
) -> anyhow::Result<()>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let root = canvas(path, (1000, 650))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_label_formatter(&x_ticks)
        .y_label_formatter(&y_ticks)
        .label_style(("sans-serif", 14))
        .draw()?;
    let mut drawn: Vec<(i32, i32)> = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mut pts: Vec<(f64, f64)> = s.points.iter().copied().filter(keep).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        drawn.extend(pts.iter().map(|p| chart.backend_coord(p)));
        if lines && pts.len() > 1 {
            chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
        }
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 5, color.filled())))?
            .label(s.name.clone())
            .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.filled()));
    }
    let corner = legend_corner(chart.plotting_area().get_pixel_range(), series, &drawn);
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .label_font(("sans-serif", 14))
        .position(corner)
        .draw()?;
    root.present()
        .with_context(|| format!("{}: cannot write the plot", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{log_tick, tick};

    #[test]
    fn ticks_are_short_and_small_values_keep_their_digits() {
        let cases = [
            (0.0, "0"),
            (1.0, "1"),
            (2.5, "2.5"),
            (1500.0, "1.5k"),
            (2e7, "20M"),
            (0.05, "0.05"),
            (0.012, "0.012"),
            (0.0012, "0.0012"),
            (-0.5, "-0.5"),
        ];
        for (v, want) in cases {
            assert_eq!(tick(&v), want, "{v}");
        }
        // A log axis labels 1, 2 and 5 of each decade only.
        for (v, want) in [
            (1e6, "1M"),
            (2e7, "20M"),
            (5e-3, "0.005"),
            (7e7, ""),
            (9e1, ""),
        ] {
            assert_eq!(log_tick(&v), want, "{v}");
        }
    }
}
