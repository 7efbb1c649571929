//! How `top`'s screen is laid out and drawn (ratatui): a header, the threads, the hottest
//! functions or lines, and a line of keys and messages; `?` lays the help over it.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table};
use ratatui::Frame;

use super::table::{Row as TopRow, ThreadRow};

/// Everything one screen shows, made ready by the loop.
pub struct Screen<'a> {
    pub header: Vec<String>,
    /// The stalls, one line each, newest first, and the panel's title (`None`: no panel).
    pub stalls: &'a [String],
    pub stall_title: Option<String>,
    pub threads: &'a [ThreadRow],
    /// The thread the table is of, when one is chosen.
    pub thread: Option<u32>,
    pub rows: &'a [TopRow],
    /// Samples the rows' shares are of, and the seconds one sample stands for.
    pub samples: u64,
    pub interval: f64,
    /// What the table heads its first column with ("function" or "line").
    pub what: &'static str,
    pub status: String,
    pub help: bool,
}

/// The keys, as `?` lists them.
pub const HELP: &[&str] = &[
    "q  quit (the program runs on)",
    "s  sort by own, total, name",
    "l  functions / lines",
    "c  the last seconds / since the start",
    "t  all threads / each thread in turn",
    "p  pause / resume the display",
    "r  reset the counts since the start",
    "w  write what is shown: a .prof file and an HTML report",
    "d  write every thread's stack now (rprofile dump) to a file",
    "?  this help",
];

pub fn draw(f: &mut Frame<'_>, s: &Screen<'_>) {
    let area = f.area();
    let thread_lines = (s.threads.len() as u16 + 3).min(area.height / 3).max(3);
    let stall_lines = match s.stall_title {
        Some(_) => (s.stalls.len().max(1) as u16 + 1).min(6),
        None => 0,
    };
    let [head, threads, stalls, table, foot] = Layout::vertical([
        Constraint::Length(s.header.len() as u16),
        Constraint::Length(thread_lines),
        Constraint::Length(stall_lines),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    if let Some(title) = &s.stall_title {
        let lines: Vec<Line> = match s.stalls.is_empty() {
            true => vec![Line::from("none yet")],
            false => s.stalls.iter().map(|l| Line::from(l.as_str())).collect(),
        };
        f.render_widget(
            Paragraph::new(lines)
                .block(Block::default().borders(Borders::TOP).title(title.as_str())),
            stalls,
        );
    }
    let header: Vec<Line> = s.header.iter().map(|l| Line::from(l.as_str())).collect();
    f.render_widget(Paragraph::new(header), head);
    draw_threads(f, s, threads);
    draw_rows(f, s, table);
    f.render_widget(
        Paragraph::new(s.status.as_str()).style(Style::new().add_modifier(Modifier::REVERSED)),
        foot,
    );
    if s.help {
        let width = HELP.iter().map(|l| l.len()).max().unwrap_or(0) as u16 + 4;
        let height = HELP.len() as u16 + 2;
        let r = Rect {
            x: area.width.saturating_sub(width) / 2,
            y: area.height.saturating_sub(height) / 2,
            width: width.min(area.width),
            height: height.min(area.height),
        };
        f.render_widget(Clear, r);
        let lines: Vec<Line> = HELP.iter().map(|l| Line::from(*l)).collect();
        f.render_widget(
            Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" keys ")),
            r,
        );
    }
}

fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

fn draw_threads(f: &mut Frame<'_>, s: &Screen<'_>, area: Rect) {
    let rows = s.threads.iter().map(|t| {
        let busy = t
            .busy
            .map_or("-".to_string(), |b| format!("{:.0}%", 100.0 * b));
        let mark = if Some(t.index) == s.thread {
            "> "
        } else {
            "  "
        };
        Row::new(vec![
            Cell::from(format!("{mark}{}", t.title)),
            Cell::from(t.state),
            Cell::from(busy),
            Cell::from(t.samples.to_string()),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Min(20),
            Constraint::Length(16),
            Constraint::Length(6),
            Constraint::Length(9),
        ],
    )
    .header(Row::new(vec!["thread", "state", "busy", "samples"]).style(bold()))
    .block(Block::default().borders(Borders::TOP).title(" threads "));
    f.render_widget(table, area);
}

fn draw_rows(f: &mut Frame<'_>, s: &Screen<'_>, area: Rect) {
    let all = s.samples.max(1) as f64;
    let shown = area.height.saturating_sub(2) as usize;
    let rows = s.rows.iter().take(shown).map(|r| {
        Row::new(vec![
            Cell::from(format!("{:5.1}%", 100.0 * r.own as f64 / all)),
            Cell::from(format!("{:8.3}", r.own as f64 * s.interval)),
            Cell::from(format!("{:5.1}%", 100.0 * r.total as f64 / all)),
            Cell::from(format!("{:8.3}", r.total as f64 * s.interval)),
            Cell::from(r.label.as_str()),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(7),
            Constraint::Length(9),
            Constraint::Length(7),
            Constraint::Length(9),
            Constraint::Min(20),
        ],
    )
    .header(Row::new(vec!["own%", "own s", "total%", "total s", s.what]).style(bold()))
    .block(Block::default().borders(Borders::TOP));
    f.render_widget(table, area);
}
