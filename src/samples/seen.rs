//! `Seen`: what one read of a run saw of one thread, as the recording and the bins by time
//! keep it.

/// What a read saw of one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Counted at this stack; `on_cpu` when it was on a CPU, `cut` when the stack was deeper
    /// than the reader's limit (cut at its innermost frames).
    Counted { stack: u32, on_cpu: bool, cut: bool },
    /// Seen, not counted: off a CPU in cpu mode, without the GIL in gil mode, or in no Python
    /// code (off a CPU and without the GIL).
    Idle { thread: u32 },
    /// Its read was torn.
    Dropped { thread: u32 },
}
