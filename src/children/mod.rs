//! The native side of profiled child processes (`--subprocesses`; the rest is Python, in
//! `rprofile.children`): `sigterm` keeps a child's SIGTERM from being lost before its Python
//! handler saves its profile.

pub mod sigterm;
