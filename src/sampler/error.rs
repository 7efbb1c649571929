//! Why a target's stacks (or anything else of it) were not read: one error type for the reader.

use std::fmt;
use std::io;

#[derive(Debug)]
pub enum Error {
    /// A read of the target failed (it exited, a pointer was torn, or no permission).
    Io(io::Error),
    /// The target's Python version is one whose stacks this reader cannot read yet.
    Unsupported(String),
    /// What was read does not hang together (a layout that is not the expected one).
    Layout(String),
    /// The target's interpreter is not running yet (its runtime is there, not yet set up):
    /// read it again later.
    NotReady(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Unsupported(why) | Error::Layout(why) | Error::NotReady(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}
