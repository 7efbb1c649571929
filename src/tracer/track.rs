//! A thread's track (`threads=True`): its call stack, totals and entry labels, and what names
//! the thread. The one in use sits in `State`; the others are parked (see `threads.rs`).

use pyo3::prelude::*;

use crate::core::aggregator::Aggregator;
use crate::core::frames::Stack;

/// Which thread a track belongs to: its thread state's address and the interpreter's id for
/// it. Events compare the address only (one call into the interpreter); the id, which later
/// threads do not reuse as they may reuse an address, is checked when tracks are switched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ThreadKey {
    pub tstate: usize,
    pub id: u64,
}

/// One thread's data while another thread's is in use.
pub struct Track {
    pub key: ThreadKey,
    pub info: ThreadInfo,
    pub agg: Aggregator,
    pub stack: Stack,
    pub user_objs: Vec<Py<PyAny>>,
}

impl Track {
    /// A placeholder, while a parked track is swapped in.
    pub fn empty() -> Track {
        Track {
            key: ThreadKey::default(),
            info: ThreadInfo::default(),
            agg: Aggregator::without_caches(true),
            stack: Stack::default(),
            user_objs: Vec::new(),
        }
    }
}

/// What names a thread in `thread_stats()`.
#[derive(Clone, Debug, Default)]
pub struct ThreadInfo {
    /// `threading.get_ident()` of the thread.
    pub ident: u64,
    /// Its `threading.Thread` name when the track was made, if it had one.
    pub name: Option<String>,
}
