//! Helpers for Python objects that the faces (`py/`), the profiler and the tracer share:
//! `objects` builds stats dicts and keys from a model, `text` turns names between Python str
//! and the engines' UTF-8 bytes, `gc` pauses the collector while many objects are made,
//! `oserror` raises a system error as Python does, `pickling` is what the picklable objects
//! share.

pub mod gc;
pub mod objects;
pub mod oserror;
pub mod pickling;
pub mod text;
