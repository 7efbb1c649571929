//! `rprofile top`: a full-screen live view of a sampling run, refreshed every second: the
//! threads and their states over the last seconds, and the hottest functions or lines, of the
//! last seconds or since the start, for all threads or one (`table`), drawn with ratatui on its
//! crossterm backend (`draw`). The run samples on its own thread; the view asks it for its
//! profiles (`sampler::session::Request`) and never touches the target.

pub mod draw;
pub mod table;

use std::io::{self, Stdout, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::Terminal;

use crate::core::clock::clock_ns;
use crate::report::{write_html, Inputs, StallsInput};
use crate::sampler::session::Request;
use crate::samples::profile::{Mode, Profile};
use crate::samples::stalls::{self, Stall};
use crate::samples::stats as sampled_stats;
use crate::samples::summary;
use table::{Counts, Sort};

/// How often the view asks for new figures.
const REFRESH: Duration = Duration::from_secs(1);

/// What the view shows and of what.
pub struct Options {
    /// The program or process watched, as the header names it.
    pub title: String,
    pub pid: i32,
    pub version: Option<(u8, u8)>,
    pub rate: f64,
    pub mode: Mode,
    /// Whether the run reads each thread's CPU state.
    pub cpu_states: bool,
    /// Whether the run stops the target for each read (`--blocking`).
    pub blocking: bool,
    /// The seconds of "the last seconds".
    pub window: f64,
    /// Where `w` writes.
    pub folder: PathBuf,
    /// The least length (seconds) of the stalls shown as they happen; `None`: none looked for.
    pub stall: Option<f64>,
}

/// How the view ended, and the files `w` wrote.
pub enum Outcome {
    /// `q` (or Ctrl-C).
    Quit,
    /// The run ended: the target exited, or its reads failed.
    Ended,
}

/// The terminal in raw mode on the alternate screen, given back as it was on drop (on every
/// path, a panic's unwinding included).
struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    fn enter() -> io::Result<Screen> {
        enable_raw_mode()?;
        let mut out = io::stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, cursor::Hide) {
            let _ = disable_raw_mode();
            return Err(e);
        }
        let terminal = Terminal::new(CrosstermBackend::new(out));
        match terminal {
            Ok(terminal) => Ok(Screen { terminal }),
            Err(e) => {
                let _ = execute!(io::stdout(), cursor::Show, LeaveAlternateScreen);
                let _ = disable_raw_mode();
                Err(e)
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = execute!(
            self.terminal.backend_mut(),
            cursor::Show,
            LeaveAlternateScreen
        );
        let _ = disable_raw_mode();
        let _ = io::stdout().flush();
    }
}

/// The view's state: what is asked for, by the keys.
struct View {
    sort: Sort,
    lines: bool,
    since_start: bool,
    /// The thread the table is of (an index into the profile's threads).
    thread: Option<u32>,
    paused: bool,
    help: bool,
    /// Everything since the start as it was at the last reset.
    base: Option<Profile>,
    /// Seconds into the run of the last reset.
    reset_at: f64,
    message: String,
}

/// The two profiles a screen is made from, and the stalls of what the run keeps.
struct Figures {
    window: Profile,
    whole: Profile,
    stalls: Vec<Stall>,
}

/// Asks the run for its last `window` seconds and for everything since its start (with the
/// stalls of `stall` seconds or longer); `None` once it has ended.
fn fetch(
    requests: &Sender<Request>,
    window: f64,
    stall: Option<f64>,
    wait: Duration,
) -> Option<Figures> {
    let ask = |seconds, whole, stalls| {
        let (tx, rx) = channel();
        requests
            .send(Request {
                seconds,
                whole,
                stalls,
                reply: tx,
            })
            .ok()?;
        rx.recv_timeout(wait).ok()
    };
    let window = ask(Some(window), false, None)?.profile;
    let whole = ask(None, true, stall)?;
    Some(Figures {
        window,
        whole: whole.profile,
        stalls: whole.stalls,
    })
}

/// Writes a dump of every thread's stack (`rprofile dump`'s) and names the file, or says why not.
pub type Dump<'a> = &'a dyn Fn() -> Result<PathBuf, String>;

/// Runs the view until `q` or the end of the run (`running` false, or no answer from it); `d`
/// calls `dump`. Returns how it ended and the files `w` and `d` wrote.
pub fn run(
    requests: &Sender<Request>,
    running: &dyn Fn() -> bool,
    dump: Dump<'_>,
    o: &Options,
) -> io::Result<(Outcome, Vec<PathBuf>)> {
    let wait = Duration::from_secs_f64(1.0 / o.rate + 5.0);
    let Some(mut figures) = fetch(requests, o.window, o.stall, wait) else {
        return Ok((Outcome::Ended, Vec::new()));
    };
    let mut screen = Screen::enter()?;
    let mut view = View {
        sort: Sort::Own,
        lines: false,
        since_start: false,
        thread: None,
        paused: false,
        help: false,
        base: None,
        reset_at: 0.0,
        message: String::new(),
    };
    let mut written = Vec::new();
    let mut next = Instant::now() + REFRESH;
    let (mut cpu_at, mut wall_at) = (clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID), Instant::now());
    let mut own_cpu = 0.0;
    let outcome = loop {
        draw_screen(&mut screen.terminal, o, &view, &figures, own_cpu)?;
        let timeout = next.saturating_duration_since(Instant::now());
        if event::poll(timeout)? {
            match event::read()? {
                Event::Key(k) if k.kind == KeyEventKind::Press => {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if ctrl_c || k.code == KeyCode::Char('q') {
                        break Outcome::Quit;
                    }
                    match k.code {
                        KeyCode::Char('d') => {
                            view.message = match dump() {
                                Ok(path) => {
                                    let name = path.file_name().unwrap_or_default();
                                    let said = format!("wrote {}", name.to_string_lossy());
                                    written.push(path);
                                    said
                                }
                                Err(why) => format!("cannot write the dump: {why}"),
                            };
                        }
                        KeyCode::Char(c) => key(c, &mut view, &figures, o, &mut written),
                        _ => {}
                    }
                }
                // A resize is drawn anew at the top of the loop.
                _ => {}
            }
        }
        if Instant::now() >= next {
            next = Instant::now() + REFRESH;
            if !running() {
                break Outcome::Ended;
            }
            if !view.paused {
                match fetch(requests, o.window, o.stall, wait) {
                    Some(f) => figures = f,
                    None => break Outcome::Ended,
                }
            }
            let cpu = clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID);
            let wall = wall_at.elapsed().as_secs_f64();
            own_cpu = (cpu - cpu_at) as f64 / 1e9 / wall.max(1e-9);
            (cpu_at, wall_at) = (cpu, Instant::now());
        }
    };
    drop(screen);
    Ok((outcome, written))
}

/// What a key does.
fn key(c: char, view: &mut View, figures: &Figures, o: &Options, written: &mut Vec<PathBuf>) {
    view.message.clear();
    match c {
        's' => view.sort = view.sort.next(),
        'l' => view.lines = !view.lines,
        'c' => view.since_start = !view.since_start,
        'p' => view.paused = !view.paused,
        '?' => view.help = !view.help,
        'r' => {
            view.base = Some(figures.whole.clone());
            view.reset_at = figures.whole.duration;
            view.since_start = true;
            view.message = "counts reset: since the start is since now".into();
        }
        't' => {
            // The threads of the profile shown: the window and the whole run number theirs
            // apart (CI, 3.15: the window's index named another thread of the whole run).
            let shown = if view.since_start {
                &figures.whole
            } else {
                &figures.window
            };
            let seen: Vec<u32> = table::threads(shown, o.cpu_states)
                .iter()
                .map(|t| t.index)
                .collect();
            view.thread = match view.thread {
                None => seen.first().copied(),
                Some(t) => seen
                    .iter()
                    .position(|&s| s == t)
                    .and_then(|i| seen.get(i + 1).copied()),
            };
        }
        'w' => {
            // What the view shows: since the reset, when there was one.
            let since_reset;
            let shown = match (view.since_start, &view.base) {
                (true, Some(base)) => {
                    since_reset = figures.whole.since(base);
                    &since_reset
                }
                (true, None) => &figures.whole,
                (false, _) => &figures.window,
            };
            // Since a reset, the stalls before it are not in what is shown either.
            let after = if view.since_start { view.reset_at } else { 0.0 };
            let stalls = snapshot_stalls(shown, figures, o.stall, after);
            view.message = match write_snapshot(shown, o, stalls) {
                Ok(paths) => {
                    // Their names (the folder is the one top was started in), to fit the line.
                    let names: Vec<String> = paths
                        .iter()
                        .map(|p| p.file_name().unwrap_or_default().to_string_lossy().into())
                        .collect();
                    written.extend(paths);
                    format!("wrote {}", names.join(" and "))
                }
                Err(e) => format!("cannot write the snapshot: {e}"),
            };
        }
        _ => {}
    }
}

/// The stalls (of `min` seconds or longer, when looked for) that overlap the time `shown` covers
/// from `after` seconds on (a reset's time; its bins before are empty, not gone), for its
/// snapshot's report: named from the whole run they were found in, whose tables the shown
/// profile's threads and frames are the first of. None where `shown` has no times (a merge of
/// processes).
fn snapshot_stalls(
    shown: &Profile,
    figures: &Figures,
    min: Option<f64>,
    after: f64,
) -> Option<StallsInput> {
    let (min, time) = (min?, shown.time.as_ref()?);
    let start = time.origin as f64 / 1e6;
    let to = start + (time.width * time.bins.len() as u64) as f64 / 1e6;
    let from = start.max(after);
    let kept: Vec<Stall> = figures
        .stalls
        .iter()
        .filter(|s| s.start < to && s.start + s.duration > from)
        .cloned()
        .collect();
    Some(StallsInput::new(&figures.whole, &kept, min))
}

/// Writes `p` as a stats file and an HTML report in `o.folder`, named
/// `rprofile-top-PID-N.prof` and `.html` with the first N free; the report lists `stalls`.
fn write_snapshot(
    p: &Profile,
    o: &Options,
    stalls: Option<StallsInput>,
) -> io::Result<Vec<PathBuf>> {
    if p.stacks.is_empty() {
        // A stats file of no function is one pstats cannot read.
        return Err(io::Error::other("no samples in what is shown yet"));
    }
    let (prof, html) = (1..)
        .map(|n| {
            let stem = o.folder.join(format!("rprofile-top-{}-{n}", o.pid));
            (stem.with_extension("prof"), stem.with_extension("html"))
        })
        .find(|(a, b)| !a.exists() && !b.exists())
        .unwrap_or_default();
    write_to(&prof, |w| sampled_stats::write_stats(w, p))?;
    let mut model = sampled_stats::model(p);
    model.sampled = true;
    let mut inputs = Inputs::new(&model, &o.title);
    inputs.sampled = Some(p);
    inputs.stalls = stalls;
    write_to(&html, |w| write_html(w, &inputs))?;
    Ok(vec![prof, html])
}

fn write_to(
    path: &Path,
    write: impl FnOnce(&mut io::BufWriter<std::fs::File>) -> io::Result<()>,
) -> io::Result<()> {
    let mut w = io::BufWriter::new(std::fs::File::create(path)?);
    write(&mut w)?;
    w.flush()
}

fn draw_screen(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    o: &Options,
    view: &View,
    figures: &Figures,
    own_cpu: f64,
) -> io::Result<()> {
    let shown = match view.since_start {
        true => &figures.whole,
        false => &figures.window,
    };
    let mut counts: Counts = table::counts(shown, view.thread, view.lines);
    if let (true, Some(base)) = (view.since_start, &view.base) {
        counts = table::since(&counts, &table::counts(base, view.thread, view.lines));
    }
    let rows = table::rows(shown, &counts, view.sort);
    let threads = table::threads(&figures.window, o.cpu_states);
    let whole = &figures.whole;
    let version = o
        .version
        .map_or(String::new(), |(a, b)| format!(", Python {a}.{b}"));
    let span = match (view.since_start, &view.base) {
        (false, _) => format!("the last {} s", o.window),
        (true, None) => "since the start".to_string(),
        (true, Some(_)) => format!("since the reset at {:.1} s", view.reset_at),
    };
    let who = match view.thread {
        None => "all threads".to_string(),
        Some(t) => format!("thread {}", shown.thread_label(t)),
    };
    let header = vec![
        format!("rprofile top: {} (pid {}{version})", o.title, o.pid),
        format!(
            "{} Hz, {} mode{}: {} samples read, {} missed, {}% torn, over {:.1} s; rprofile's \
             CPU {:.1}%",
            o.rate,
            o.mode.name(),
            if o.blocking { ", blocking" } else { "" },
            whole.taken,
            whole.asked.saturating_sub(whole.taken),
            summary::torn_percent(whole),
            whole.duration,
            100.0 * own_cpu
        ),
        format!(
            "{}, {span}, {who}, sorted by {}{}",
            if view.lines { "lines" } else { "functions" },
            view.sort.name(),
            if view.paused { " (paused)" } else { "" }
        ),
    ];
    let status = match view.message.is_empty() {
        true => {
            "q quit  s sort  l lines  c since start  t thread  p pause  r reset  w write  ? help"
                .to_string()
        }
        false => view.message.clone(),
    };
    // The newest stalls first, each as one line.
    let stalls: Vec<String> = figures
        .stalls
        .iter()
        .rev()
        .map(|st| {
            let place = st.frames.first().map_or(String::new(), |&(frame, n)| {
                let label = table::label(whole, table::Key::Line(frame));
                format!(
                    "{label} {:.0}%",
                    100.0 * n as f64 / st.samples.max(1) as f64
                )
            });
            format!(
                "at {:.1} s for {:.2} s: {}: {place}",
                st.start,
                st.duration,
                whole.thread_label(st.thread)
            )
        })
        .collect();
    let stall_title = o.stall.map(|min| {
        format!(
            " stalls of {} ms or longer, {} ",
            (min * 1e3).round(),
            stalls::what(o.mode)
        )
    });
    let screen = draw::Screen {
        header,
        stalls: &stalls,
        stall_title,
        threads: &threads,
        thread: view.thread,
        rows: &rows,
        samples: counts.samples,
        interval: shown.interval,
        what: if view.lines { "line" } else { "function" },
        status,
        help: view.help,
    };
    terminal.draw(|f| draw::draw(f, &screen))?;
    Ok(())
}
